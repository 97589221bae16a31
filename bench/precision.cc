// Release precision of a real sluiced with real HTTP workers (issue 3).
//   (a) one tenant at 10 jobs/s, 200 jobs queued in advance, 4 long-polling workers —
//       the workload of ../shared/peer-bench/bullmq-limiter.js;
//   (b) many tenants (100) at 100 jobs/s each for 10 s.
// Times are when a worker receives the lease (what a downstream would see). Windows
// are sliding [t, t+w), as in the BullMQ script. Prints JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "common/time.h"
#include "tests/testutil/server_process.h"

using nlohmann::json;
using sluice::testing::Call;
using sluice::testing::ServerOptions;
using sluice::testing::ServerProcess;
using SteadyClock = std::chrono::steady_clock;

namespace {

double Pct(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// Sliding-window maximum count in [t, t + w).
int MaxInWindow(const std::vector<double>& ts, double w_ms) {
  int best = 0;
  for (size_t i = 0, j = 0; i < ts.size(); ++i) {
    while (j < ts.size() && ts[j] < ts[i] + w_ms) ++j;
    best = std::max(best, static_cast<int>(j - i));
  }
  return best;
}

std::vector<double> Sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v;
}

json Stats(std::vector<double> ts, double ideal_gap_ms) {
  std::sort(ts.begin(), ts.end());
  std::vector<double> gaps;
  for (size_t i = 1; i < ts.size(); ++i) gaps.push_back(ts[i] - ts[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  double span = ts.size() > 1 ? (ts.back() - ts.front()) / 1000.0 : 0;
  auto r3 = [](double v) { return std::round(v * 1000) / 1000; };
  return {{"n", ts.size()},
          {"span_s", r3(span)},
          {"avg_rate_per_s", span > 0 ? r3((ts.size() - 1) / span) : 0},
          {"max_in_any_100ms_sliding", MaxInWindow(ts, 100)},
          {"max_in_any_1000ms_sliding", MaxInWindow(ts, 1000)},
          {"ideal_gap_ms", ideal_gap_ms},
          {"gap_ms",
           {{"min", r3(gaps.empty() ? 0 : gaps.front())},
            {"p50", r3(Pct(gaps, 0.5))},
            {"p90", r3(Pct(gaps, 0.9))},
            {"p99", r3(Pct(gaps, 0.99))},
            {"max", r3(gaps.empty() ? 0 : gaps.back())}}}};
}

struct Setup {
  ServerProcess& server;
  std::unique_ptr<httplib::Client> admin = server.Client(server.admin_token());
  std::string Token(const json& body) {
    auto r = Call(*admin, "POST", "/v1/admin/tokens", body);
    if (r.status != 201) throw std::runtime_error("token: " + r.body.dump());
    return r.body["token"];
  }
  void Queue(const std::string& name, const json& policy) {
    auto r = Call(*admin, "PUT", "/v1/admin/queues/" + name, policy);
    if (r.status != 200) throw std::runtime_error("queue: " + r.body.dump());
  }
};

// Submits `per_tenant` jobs for each token from `threads` connections; returns jobs/s.
double Fill(ServerProcess& server, const std::string& queue, const std::vector<std::string>& tokens,
            int per_tenant, int threads) {
  std::atomic<size_t> next{0};
  const size_t total = tokens.size() * static_cast<size_t>(per_tenant);
  auto t0 = SteadyClock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      // One connection per thread: httplib serves each keep-alive connection with a
      // pool thread, so a connection per tenant would starve the pool.
      auto c = server.Client();
      for (size_t i; (i = next.fetch_add(1)) < total;) {
        // Round-robin over tenants so every bucket fills at once.
        const std::string& token = tokens[i % tokens.size()];
        httplib::Headers auth = {{"Authorization", "Bearer " + token}};
        auto res = c->Post(("/v1/queues/" + queue + "/jobs").c_str(), auth,
                           R"({"payload":{"n":1}})", "application/json");
        if (!res || res->status != 202) {
          std::fprintf(stderr, "submit failed: %d %s\n", res ? res->status : -1,
                       res ? res->body.c_str() : "");
          std::exit(1);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  double s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  return total / s;
}

// Server-side release times (leased_at, ms resolution on the wire) per tenant, of the
// last Drain.
std::map<std::string, std::vector<double>> release_times;

// Workers long-poll until `expected` jobs were received; returns receipt times per tenant.
// Completions run on their own threads, so a lease loop is never held up by acks (a
// worker with free slots).
std::map<std::string, std::vector<double>> Drain(ServerProcess& server, const std::string& queue,
                                                 const std::string& work_token, size_t expected,
                                                 int workers, int max_jobs,
                                                 SteadyClock::time_point t0) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::string, std::string>> to_complete;  // id, lease_id
  std::map<std::string, std::vector<double>> times;
  std::atomic<size_t> received{0};
  std::atomic<size_t> completed{0};
  release_times.clear();
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      auto c = server.Client(work_token);
      json lease = {{"queues", {queue}},
                    {"max_jobs", max_jobs},
                    {"wait_ms", 1000},
                    // Acks trail releases at 10k/s on a slow disk: a lease must outlive
                    // the completers' backlog.
                    {"lease_ms", 600000},
                    {"worker_id", "w" + std::to_string(w)}};
      while (received.load() < expected) {
        auto res = c->Post("/v1/leases", lease.dump(), "application/json");
        double at = std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
        if (!res || res->status != 200) {
          std::fprintf(stderr, "lease failed: %d\n", res ? res->status : -1);
          std::exit(1);
        }
        json jobs = json::parse(res->body)["jobs"];
        {
          std::lock_guard lock(mu);
          for (const json& j : jobs) {
            times[j["tenant"]].push_back(at);
            auto leased = sluice::ParseRfc3339(j["leased_at"].get<std::string>());
            release_times[j["tenant"]].push_back(static_cast<double>(*leased) / 1000.0);
            to_complete.emplace_back(j["id"], j["lease_id"]);
          }
        }
        cv.notify_all();
        received += jobs.size();
      }
    });
  }
  // Each ack waits for a flushed commit (~1 ms here or more): enough connections that
  // acks keep up with the releases.
  const int completers = std::max(32, 4 * workers);
  for (int k = 0; k < completers; ++k) {
    pool.emplace_back([&] {
      auto c = server.Client(work_token);
      for (;;) {
        std::pair<std::string, std::string> job;
        {
          std::unique_lock lock(mu);
          cv.wait(lock, [&] { return !to_complete.empty() || completed.load() >= expected; });
          if (to_complete.empty()) return;
          job = to_complete.front();
          to_complete.pop_front();
        }
        json body = {{"lease_id", job.second}};
        auto done = c->Post(("/v1/jobs/" + job.first + "/complete").c_str(), body.dump(),
                            "application/json");
        if (!done || done->status != 200) {
          std::fprintf(stderr, "complete failed: %d %s\n", done ? done->status : -1,
                       done ? done->body.c_str() : httplib::to_string(done.error()).c_str());
          std::exit(1);
        }
        if (++completed >= expected) cv.notify_all();
      }
    });
  }
  for (auto& t : pool) t.join();
  return times;
}

std::vector<std::string> g_server_args;  // extra sluiced flags (--server-arg)

json WorkloadA(int jobs, double rate, int workers) {
  ServerOptions o;
  o.extra_args = g_server_args;
  ServerProcess server(o);
  Setup s{server};
  s.Queue("precision-a", {{"rate", rate}, {"capacity", jobs}, {"burst", 1}});
  std::string submit = s.Token({{"scopes", {"submit"}}, {"tenant", "t0"}});
  std::string work = s.Token({{"scopes", {"work"}}});
  Fill(server, "precision-a", {submit}, jobs, 1);
  auto t0 = SteadyClock::now();
  auto times = Drain(server, "precision-a", work, static_cast<size_t>(jobs), workers, 1, t0);
  auto& ts = times["t0"];
  json out = {{"workload", "a: 1 tenant, queued in advance"},
              {"rate_per_s", rate},
              {"jobs", jobs},
              {"worker_concurrency", workers},
              {"dispatch", Stats(ts, 1000.0 / rate)},
              {"release_time_windows",
               {{"max_in_any_1000ms_sliding", MaxInWindow(Sorted(release_times["t0"]), 1000)},
                {"max_in_any_100ms_sliding", MaxInWindow(Sorted(release_times["t0"]), 100)}}}};
  out["bound_1000ms"] = rate * 1 + 1;
  out["bound_100ms"] = std::floor(rate * 0.1) + 1;
  return out;
}

json WorkloadB(int tenants, double rate, int seconds, int workers, int max_jobs) {
  ServerOptions o;
  o.extra_args = {"--http-threads", "128"};
  o.extra_args.insert(o.extra_args.end(), g_server_args.begin(), g_server_args.end());
  ServerProcess server(o);
  Setup s{server};
  const int per_tenant = static_cast<int>(rate * seconds);
  s.Queue("precision-b", {{"rate", rate}, {"capacity", per_tenant}, {"burst", 1}});
  std::vector<std::string> tokens;
  for (int i = 0; i < tenants; ++i) {
    tokens.push_back(s.Token({{"scopes", {"submit"}}, {"tenant", "t" + std::to_string(i)}}));
  }
  std::string work = s.Token({{"scopes", {"work"}}});
  double intake = Fill(server, "precision-b", tokens, per_tenant, 16);
  auto t0 = SteadyClock::now();
  auto times = Drain(server, "precision-b", work, static_cast<size_t>(tenants) * per_tenant,
                     workers, max_jobs, t0);
  double total_s = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  double first = 1e300, last = 0;
  for (auto& [tenant, ts] : times) {
    for (double t : ts) {
      first = std::min(first, t);
      last = std::max(last, t);
    }
  }
  std::vector<double> p99s, p50s, rates;
  int worst100 = 0, worst1000 = 0, release_worst100 = 0, release_worst1000 = 0;
  std::vector<double> release_p99s;
  for (auto& [tenant, ts] : release_times) {
    release_p99s.push_back(Stats(ts, 1000.0 / rate)["gap_ms"]["p99"].get<double>());
    release_worst100 = std::max(release_worst100, MaxInWindow(Sorted(ts), 100));
    release_worst1000 = std::max(release_worst1000, MaxInWindow(Sorted(ts), 1000));
  }
  double worst_max_gap = 0, min_gap = 1e9;
  for (auto& [tenant, ts] : times) {
    json st = Stats(ts, 1000.0 / rate);
    p99s.push_back(st["gap_ms"]["p99"]);
    p50s.push_back(st["gap_ms"]["p50"]);
    rates.push_back(st["avg_rate_per_s"]);
    worst100 = std::max(worst100, st["max_in_any_100ms_sliding"].get<int>());
    worst1000 = std::max(worst1000, st["max_in_any_1000ms_sliding"].get<int>());
    worst_max_gap = std::max(worst_max_gap, st["gap_ms"]["max"].get<double>());
    min_gap = std::min(min_gap, st["gap_ms"]["min"].get<double>());
  }
  std::sort(p99s.begin(), p99s.end());
  std::sort(p50s.begin(), p50s.end());
  std::sort(rates.begin(), rates.end());
  return {{"workload", "b: many tenants"},
          {"tenants", tenants},
          {"rate_per_s_per_tenant", rate},
          {"jobs", tenants * per_tenant},
          {"workers", workers},
          {"max_jobs_per_lease", max_jobs},
          {"intake_jobs_per_s_while_filling", std::round(intake)},
          {"release_span_s", std::round(last - first) / 1000},
          {"achieved_total_rate_per_s", std::round(tenants * per_tenant / ((last - first) / 1000))},
          {"all_completed_after_s", std::round(total_s * 1000) / 1000},
          {"per_tenant_rate_min_median_max", {rates.front(), Pct(rates, 0.5), rates.back()}},
          {"bound_1000ms", rate * 1 + 1},
          {"bound_100ms", std::floor(rate * 0.1) + 1},
          {"worst_max_in_any_1000ms_sliding", worst1000},
          {"worst_max_in_any_100ms_sliding", worst100},
          {"release_time_worst_max_in_any_1000ms_sliding", release_worst1000},
          {"release_time_worst_max_in_any_100ms_sliding", release_worst100},
          {"release_time_gap_ms_p99_median_over_tenants", Pct(Sorted(release_p99s), 0.5)},
          {"gap_ms_min_over_tenants", min_gap},
          {"gap_ms_p50_median_over_tenants", Pct(p50s, 0.5)},
          {"gap_ms_p99_median_over_tenants", Pct(p99s, 0.5)},
          {"gap_ms_p99_worst_tenant", p99s.back()},
          {"gap_ms_max_worst_tenant", worst_max_gap}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "ab";
  int a_jobs = 200, a_workers = 4, b_tenants = 100, b_seconds = 10, b_workers = 8, b_max_jobs = 50;
  double a_rate = 10, b_rate = 100;
  CLI::App cli{"sluice release-precision benchmark"};
  cli.add_option("--workloads", which, "a, b or ab");
  cli.add_option("--a-jobs", a_jobs);
  cli.add_option("--a-rate", a_rate);
  cli.add_option("--a-workers", a_workers);
  cli.add_option("--b-tenants", b_tenants);
  cli.add_option("--b-rate", b_rate);
  cli.add_option("--b-seconds", b_seconds);
  cli.add_option("--b-workers", b_workers);
  cli.add_option("--b-max-jobs", b_max_jobs);
  cli.add_option("--server-arg", g_server_args, "extra flag for sluiced (repeat)")
      ->allow_extra_args(false);
  CLI11_PARSE(cli, argc, argv);
  json out = json::array();
  if (which.find('a') != std::string::npos) out.push_back(WorkloadA(a_jobs, a_rate, a_workers));
  if (which.find('b') != std::string::npos) {
    out.push_back(WorkloadB(b_tenants, b_rate, b_seconds, b_workers, b_max_jobs));
  }
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
