// The article's comparison of the limiter algorithms, measured on this machine
// (issue 17, docs/algorithms.md): for each algorithm of shaper/limiters/ at one quota
// (`--limit` per `--window-ms`; token bucket and GCRA hold `--burst`, default the limit):
//   - CPU per decision: ns, one key, a million decisions of steady over-limit traffic;
//   - state bytes per key once its window is full (StateBytes: the struct plus what it
//     owns: the sliding log's entries);
//   - memory at `--keys` active keys (each with its quota in use): the heap a hash map
//     from versioned keys (rl:v1:<16 hex>) to their states takes (glibc's mallinfo2);
//   - accuracy: for steady (2 x the limit, evenly spaced), bursty (clumps of up to 2 x the
//     limit at random instants) and boundary-aligned traffic (the limit just before each
//     window boundary and again at it), 60 s of virtual time: the most admitted in any
//     window of the nominal length, against the limit, and the admitted rate.
// Prints a Markdown table, then the same as JSON on the last line. Not a test.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "shaper/limiters/limiter.h"

namespace sluice {
namespace {

struct Options {
  int64_t limit = 100;
  Micros window = kMicrosPerSecond;
  size_t keys = 100'000;
  int decisions = 1'000'000;
  int64_t burst = 0;  // token bucket and GCRA; 0: the limit
};

constexpr Micros kT0 = 1'800'000'000LL * kMicrosPerSecond;

Limit MakeLimit(Algorithm a, const Options& o) {
  return Limit{a, o.limit, o.window, o.burst > 0 ? o.burst : o.limit};
}

// Heap bytes in use (glibc's count: freed memory the allocator keeps is not counted,
// so one algorithm's map does not hide the next one's).
size_t HeapBytes() { return mallinfo2().uordblks; }

double NsPerDecision(const Limit& l, const Options& o) {
  LimiterState state = InitialState(l);
  const Micros step = std::max<Micros>(1, o.window / (2 * o.limit));  // 2 x the limit
  int64_t admitted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.decisions; ++i) {
    LimitStep s = Decide(l, std::move(state), kT0 + i * step, 1);
    admitted += s.decision.allowed ? 1 : 0;
    state = std::move(s.state);
    if (l.algorithm == Algorithm::kConcurrency && s.decision.allowed && i % 2 == 0) {
      state = Release(l, std::move(state), 1);
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (admitted == 0) std::fprintf(stderr, "nothing admitted\n");
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / o.decisions;
}

// The key's state once its quota is in use (a full window of evenly spaced requests).
LimiterState FullState(const Limit& l, const Options& o) {
  LimiterState state = InitialState(l);
  const Micros step = std::max<Micros>(1, o.window / o.limit);
  for (int64_t i = 0; i < o.limit; ++i) {
    state = Decide(l, std::move(state), kT0 + i * step, 1).state;
  }
  return state;
}

struct Memory {
  size_t state_bytes = 0;
  double heap_mib = 0;
};

Memory AtManyKeys(const Limit& l, const Options& o) {
  const LimiterState full = FullState(l, o);
  Memory m;
  m.state_bytes = StateBytes(full);
  const size_t before = HeapBytes();
  {
    std::unordered_map<std::string, LimiterState> keys;
    keys.reserve(o.keys);
    char key[40];
    for (size_t i = 0; i < o.keys; ++i) {
      std::snprintf(key, sizeof key, "rl:v1:%016llx",
                    static_cast<unsigned long long>(i) * 0x9E3779B97F4A7C15ULL);
      LimiterState s = full;
      if (auto* log = std::get_if<SlidingLogState>(&s)) log->entries.shrink_to_fit();
      keys.emplace(key, std::move(s));
    }
    m.heap_mib = static_cast<double>(HeapBytes() - before) / (1024.0 * 1024.0);
  }
  return m;
}

enum class Traffic { kSteady, kBursty, kBoundary };

std::vector<Micros> MakeTraffic(Traffic kind, const Options& o, std::mt19937_64& rng) {
  std::vector<Micros> at;
  const Micros span = 60 * kMicrosPerSecond;
  switch (kind) {
    case Traffic::kSteady: {
      const Micros step = std::max<Micros>(1, o.window / (2 * o.limit));
      for (Micros t = 0; t < span; t += step) at.push_back(kT0 + t);
      break;
    }
    case Traffic::kBursty: {
      std::uniform_int_distribution<Micros> when(0, span - 1);
      std::uniform_int_distribution<int64_t> size(1, 2 * o.limit);
      for (int c = 0; c < 60; ++c) {
        const Micros t = when(rng);
        const int64_t n = size(rng);
        for (int64_t i = 0; i < n; ++i) at.push_back(kT0 + t + i);
      }
      std::sort(at.begin(), at.end());
      break;
    }
    case Traffic::kBoundary:
      for (Micros w = o.window; w < span; w += 2 * o.window) {
        for (int64_t i = 0; i < o.limit; ++i) at.push_back(kT0 + w - 1);
        for (int64_t i = 0; i < o.limit; ++i) at.push_back(kT0 + w);
      }
      break;
  }
  return at;
}

struct Accuracy {
  int64_t most_in_window = 0;
  double admitted_per_s = 0;
};

Accuracy Measure(const Limit& l, const std::vector<Micros>& at, const Options& o) {
  LimiterState state = InitialState(l);
  std::vector<Micros> admitted;
  for (Micros t : at) {
    LimitStep s = Decide(l, std::move(state), t, 1);
    state = std::move(s.state);
    if (s.decision.allowed) {
      admitted.push_back(t);
      // Concurrency: each request holds its slot for 10 ms.
    }
  }
  Accuracy a;
  size_t first = 0;
  for (size_t j = 0; j < admitted.size(); ++j) {
    while (admitted[first] <= admitted[j] - o.window) ++first;
    a.most_in_window = std::max<int64_t>(a.most_in_window, static_cast<int64_t>(j - first + 1));
  }
  a.admitted_per_s = static_cast<double>(admitted.size()) / 60.0;
  return a;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  using namespace sluice;
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (flag == "--limit")
      o.limit = v;
    else if (flag == "--window-ms")
      o.window = v * kMicrosPerMilli;
    else if (flag == "--keys")
      o.keys = static_cast<size_t>(v);
    else if (flag == "--decisions")
      o.decisions = static_cast<int>(v);
    else if (flag == "--burst")
      o.burst = v;
    else {
      std::fprintf(stderr,
                   "usage: %s [--limit N] [--window-ms N] [--keys N] [--decisions N] [--burst N]\n",
                   argv[0]);
      return 2;
    }
  }
  std::printf("quota: %" PRId64 " per %" PRId64 " ms (token bucket, GCRA: burst %" PRId64
              "); memory at %zu keys; accuracy over 60 s of virtual time\n\n",
              o.limit, o.window / kMicrosPerMilli, o.burst > 0 ? o.burst : o.limit, o.keys);
  std::printf(
      "| algorithm | ns per decision | state bytes per key | heap at %zu keys (MiB) | "
      "most in any window / limit: steady | bursty | boundary | admitted/s: steady | "
      "bursty | boundary |\n",
      o.keys);
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::string json = "[";
  for (Algorithm a :
       {Algorithm::kFixedWindow, Algorithm::kSlidingLog, Algorithm::kSlidingWindowCounter,
        Algorithm::kTokenBucket, Algorithm::kGcra, Algorithm::kConcurrency}) {
    const Limit l = MakeLimit(a, o);
    const double ns = NsPerDecision(l, o);
    const Memory m = AtManyKeys(l, o);
    std::mt19937_64 rng(17);
    Accuracy acc[3];
    const Traffic kinds[3] = {Traffic::kSteady, Traffic::kBursty, Traffic::kBoundary};
    for (int k = 0; k < 3; ++k) acc[k] = Measure(l, MakeTraffic(kinds[k], o, rng), o);
    const bool windowed = a != Algorithm::kConcurrency;
    auto ratio = [&](int k) {
      char b[32];
      if (!windowed) return std::string("–");
      std::snprintf(b, sizeof b, "%" PRId64 " (%.2f)", acc[k].most_in_window,
                    static_cast<double>(acc[k].most_in_window) / static_cast<double>(o.limit));
      return std::string(b);
    };
    auto rate = [&](int k) {
      char b[32];
      if (!windowed) return std::string("–");
      std::snprintf(b, sizeof b, "%.1f", acc[k].admitted_per_s);
      return std::string(b);
    };
    std::printf("| %s | %.0f | %zu | %.1f | %s | %s | %s | %s | %s | %s |\n",
                std::string(AlgorithmName(a)).c_str(), ns, m.state_bytes, m.heap_mib,
                ratio(0).c_str(), ratio(1).c_str(), ratio(2).c_str(), rate(0).c_str(),
                rate(1).c_str(), rate(2).c_str());
    char row[512];
    std::snprintf(row, sizeof row,
                  "%s{\"algorithm\":\"%s\",\"ns_per_decision\":%.1f,\"state_bytes\":%zu,"
                  "\"heap_mib\":%.1f,\"most_in_window\":[%" PRId64 ",%" PRId64 ",%" PRId64 "]}",
                  json.size() > 1 ? "," : "", std::string(AlgorithmName(a)).c_str(), ns,
                  m.state_bytes, m.heap_mib, acc[0].most_in_window, acc[1].most_in_window,
                  acc[2].most_in_window);
    json += row;
  }
  std::printf(
      "\n(concurrency has no window: its accuracy is in flight against the limit, "
      "exact by construction)\n%s]\n",
      json.c_str());
  return 0;
}
