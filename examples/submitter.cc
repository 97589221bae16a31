// A submitting client done right, and the demo's bursty load: each tenant fires bursts
// of report-export jobs. Every job gets one Idempotency-Key and one absolute deadline,
// fixed for all its tries (the same key with a different body would be a 422), so a
// retry after a lost answer can never create a second job. A 429 queue_full, a 503 or
// no answer is retried after Retry-After plus exponential backoff with full jitter
// (worker/backoff.h); the client gives up when the next try would come after the job's
// deadline, or at once on 429 deadline_unreachable and other 4xx.
//   SLUICE_TOKEN_ACME=... sluice-submit --server URL --tenant acme [--tenant globex]
//       [--jobs 12] [--bursts 1] [--interval-ms 8000] [--deadline-in-ms 60000]
// A tenant's token comes from SLUICE_TOKEN_<TENANT> (upper case), else SLUICE_TOKEN.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>
#include <thread>

#include "client/connection.h"
#include "client/server_flag.h"
#include "common/encoding.h"
#include "common/random.h"
#include "common/time.h"
#include "worker/backoff.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Flags {
  sluice::ServerUrl server;
  std::string queue = "report-export", run_id;
  std::vector<std::string> tenants;
  int jobs = 12, bursts = 1, interval_ms = 8000, rows_min = 5, rows_max = 40;
  int64_t deadline_in_ms = 60000;
  uint64_t seed = 0;
};

struct Pending {
  int seq = 0;
  int burst = 0;
  std::string key;  // Idempotency-Key: one per job, reused by every try
  json body;
  sluice::Micros deadline = 0;
  Clock::time_point next_try;
  int tries = 0;
  bool operator>(const Pending& o) const { return next_try > o.next_try; }
};

struct Tally {
  int accepted = 0, gave_up = 0, answered_429 = 0, replayed = 0;
};

std::mutex g_print;
void Print(const char* fmt, auto... args) {
  std::lock_guard lock(g_print);
  std::string at = sluice::FormatRfc3339(sluice::WallNowMicros()).substr(11, 12);
  std::printf("%s  [submitter] ", at.c_str());
  std::printf(fmt, args...);
  std::printf("\n");
  std::fflush(stdout);
}

std::string TokenFor(const std::string& tenant) {
  std::string var = "SLUICE_TOKEN_";
  for (char c : tenant) var += std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_';
  if (const char* t = std::getenv(var.c_str())) return t;
  if (const char* t = std::getenv("SLUICE_TOKEN")) return t;
  return "";
}

json ReportPayload(std::mt19937_64& rng, const Flags& f, const std::string& tenant, int seq) {
  int rows =
      f.rows_min + static_cast<int>(rng() % static_cast<uint64_t>(f.rows_max - f.rows_min + 1));
  json data = json::array();
  for (int r = 0; r < rows; ++r) {
    char day[16];
    std::snprintf(day, sizeof day, "2024-05-%02d", 1 + r % 28);
    data.push_back(
        {day, tenant + "-acct-" + std::to_string(rng() % 50), static_cast<int>(rng() % 1000)});
  }
  return {{"report", "monthly-usage"},
          {"run", f.run_id},
          {"seq", seq},
          {"columns", {"day", "account", "units"}},
          {"rows", data}};
}

// Submits every job of one tenant, bursts apart, retrying as the header describes.
Tally SubmitTenant(const Flags& f, const std::string& tenant, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto unit = [&] { return std::uniform_real_distribution<double>(0, 1)(rng); };
  sluice::Connection http(f.server, TokenFor(tenant));
  const sluice::BackoffPolicy backoff{500, 10000};
  const std::string path = "/v1/queues/" + sluice::PercentEncode(f.queue) + "/jobs";

  Tally tally;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> todo;
  const Clock::time_point start = Clock::now();
  int next_burst = 0, seq = 0;
  std::vector<int> first_pass_left(f.bursts, f.jobs);
  std::vector<Tally> first_pass(f.bursts);
  std::vector<int64_t> first_retry_after(f.bursts, 0);

  while (next_burst < f.bursts || !todo.empty()) {
    const Clock::time_point burst_at = start + milliseconds(int64_t{f.interval_ms} * next_burst);
    if (next_burst < f.bursts && (todo.empty() || burst_at <= todo.top().next_try)) {
      for (int i = 0; i < f.jobs; ++i, ++seq) {
        json payload = ReportPayload(rng, f, tenant, seq);
        Pending p;
        p.seq = seq;
        p.burst = next_burst;
        p.key = sluice::RandomId("sub_", 12);
        p.deadline = sluice::WallNowMicros() + f.deadline_in_ms * sluice::kMicrosPerMilli;
        p.body = json{{"payload", payload},
                      {"cost", 1 + static_cast<int>(payload["rows"].size()) / 20},
                      {"deadline", sluice::FormatRfc3339(p.deadline)}};
        p.next_try = burst_at;
        todo.push(std::move(p));
      }
      ++next_burst;
      continue;
    }
    Pending p = todo.top();
    todo.pop();
    std::this_thread::sleep_until(p.next_try);  // waiting for a time, not an event
    ++p.tries;
    sluice::ApiResult res = http.Post(path, p.body, {{"Idempotency-Key", p.key}});
    sluice::Error err = sluice::MakeError(sluice::ErrorCode::kInternal, "");
    const bool accepted = res.ok();
    if (accepted) {
      if (res.value().header("Idempotent-Replayed") == "true") ++tally.replayed;
    } else {
      err = sluice::ToError(res.failure());
      if (res.failure().problem.status == 429) ++tally.answered_429;
    }
    const bool first = p.tries == 1;
    if (first) {
      --first_pass_left[p.burst];
      if (accepted) ++first_pass[p.burst].accepted;
      if (!accepted && err.code == sluice::ErrorCode::kQueueFull) {
        ++first_pass[p.burst].answered_429;
        first_retry_after[p.burst] = err.retry_after_s.value_or(0);
      }
    }
    if (accepted) {
      ++tally.accepted;
      if (!first) Print("%-8s job %d accepted after %d tries", tenant.c_str(), p.seq, p.tries);
    } else if (!sluice::IsTransient(err)) {
      ++tally.gave_up;
      Print("%-8s job %d gave up: %s", tenant.c_str(), p.seq, err.detail.c_str());
    } else {
      int64_t delay = sluice::RetryDelayMs(backoff, p.tries, err.retry_after_s, unit());
      if (sluice::WallNowMicros() + delay * sluice::kMicrosPerMilli >= p.deadline) {
        ++tally.gave_up;
        Print("%-8s job %d gave up: its deadline would pass before the next try", tenant.c_str(),
              p.seq);
      } else {
        p.next_try = Clock::now() + milliseconds(delay);
        todo.push(std::move(p));
      }
    }
    if (first && first_pass_left[p.burst] == 0) {
      const Tally& t = first_pass[p.burst];
      if (t.answered_429 > 0) {
        Print(
            "burst %d: %-8s %2d accepted, %2d answered 429 (Retry-After %llds): retrying with "
            "backoff",
            p.burst + 1, tenant.c_str(), t.accepted, t.answered_429,
            static_cast<long long>(first_retry_after[p.burst]));
      } else {
        Print("burst %d: %-8s %2d accepted", p.burst + 1, tenant.c_str(), t.accepted);
      }
    }
  }
  return tally;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App cli{"sluice-submit: submits report-export jobs, retrying 429s politely"};
  sluice::AddServerFlag(cli, f.server, "sluice URL")->required()->envname("SLUICE_SERVER");
  cli.add_option("--tenant", f.tenants, "tenant (token in SLUICE_TOKEN_<TENANT>); repeat")
      ->required();
  cli.add_option("--queue", f.queue, "queue to submit to");
  cli.add_option("--jobs", f.jobs, "jobs per tenant per burst")->check(CLI::Range(1, 100000));
  cli.add_option("--bursts", f.bursts, "how many bursts")->check(CLI::Range(1, 1000));
  cli.add_option("--interval-ms", f.interval_ms, "time between bursts");
  cli.add_option("--deadline-in-ms", f.deadline_in_ms, "each job's deadline, from its creation");
  cli.add_option("--rows-min", f.rows_min, "fewest rows in a report")->check(CLI::Range(0, 100000));
  cli.add_option("--rows-max", f.rows_max, "most rows in a report")->check(CLI::Range(0, 100000));
  cli.add_option("--run-id", f.run_id, "tag put in every payload (default: random)");
  cli.add_option("--seed", f.seed, "random seed (default: random)");
  CLI11_PARSE(cli, argc, argv);
  if (f.rows_max < f.rows_min) f.rows_max = f.rows_min;
  if (f.run_id.empty()) f.run_id = sluice::RandomId("run_", 6);
  if (f.seed == 0) f.seed = std::random_device{}();
  for (const std::string& t : f.tenants) {
    if (TokenFor(t).empty()) {
      std::fprintf(stderr, "no token for tenant %s: set SLUICE_TOKEN_<TENANT>\n", t.c_str());
      return 2;
    }
  }

  std::vector<std::thread> threads;
  std::vector<Tally> tallies(f.tenants.size());
  for (size_t i = 0; i < f.tenants.size(); ++i) {
    threads.emplace_back([&, i] { tallies[i] = SubmitTenant(f, f.tenants[i], f.seed + i); });
  }
  for (auto& t : threads) t.join();
  int gave_up = 0;
  for (size_t i = 0; i < f.tenants.size(); ++i) {
    const Tally& t = tallies[i];
    Print("done %s: accepted=%d gave_up=%d answered_429=%d replayed=%d", f.tenants[i].c_str(),
          t.accepted, t.gave_up, t.answered_429, t.replayed);
    gave_up += t.gave_up;
  }
  return gave_up == 0 ? 0 : 1;
}
