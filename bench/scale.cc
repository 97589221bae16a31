// Cost against backlog (issue 18): a real sluiced (SQLite, --synchronous FULL unless
// told) with a small backlog and another with a large one, both up at once, the same
// calls measured on each in --rounds rounds that alternate between them (odd rounds the small
// backlog first), so that the host's drift falls on both; each figure is the median of the rounds,
// and each ratio the median of the rounds' ratios. A round:
//   lease      one POST /v1/leases {max_jobs 1, wait_ms 0} at a time, --samples times
//              (each leased job completed on its own request between samples):
//              latency p50/p99;
//   drain      --workers threads lease (max_jobs 8, acks riding on the next lease) as
//              fast as they can until the backlog is empty or --drain-s seconds passed,
//              while one submitter posts single jobs at --submit-rate per second:
//              jobs/s drained, sluiced's CPU µs and KiB written (/proc/<pid>/io
//              write_bytes: WAL and checkpoints) per job drained, and the submits'
//              latency p50/p99 (intake beside release selection). The small backlog
//              drains in tens of milliseconds, so it is filled again and drained again,
//              up to --small-rounds times or --drain-s seconds of draining; only the
//              drains count (time, CPU, submits), not the refills between them, and it
//              is filled again at the start of each round;
//   writer     from /metrics, over the drains: commits/s, operations per commit, mean
//              COMMIT and WAL flush (where a submit's wait goes).
// Once per backlog: sluiced's VmRSS once filled and VmHWM at the end; restart: SIGTERM,
// then a new sluiced on the same file: seconds from spawn to the first lease that
// returns a job.
// Backlogs: small = --small-jobs over --small-tenants buckets (1k over 1k), large =
// --jobs over --tenants (1M over 10k), filled through jobs:batch (a token per tenant):
// by default one batch per tenant, each tenant's jobs admitted together, the hard case
// for a table kept in admission order, since the fair drain visits the tenants in turn;
// with --fill-run N, N jobs of each tenant per turn of the tenants (1: interleaved, as
// when many tenants submit at once; about 2.5 minutes to fill 1M here). The queue's
// rate is far above what the machine can do, so what is measured is the cost of
// choosing and recording releases. The large backlog is not refilled: with the defaults
// the rounds drain about a tenth of it. Prints a table, the rounds' own lease p99, CPU
// per job and submit p99, and, last, one JSON object.
//
// Usage: sluice-bench-scale [--jobs 1000000] [--tenants 10000] [--small-jobs 1000]
//          [--small-tenants 1000] [--rounds 3] [--samples 900] [--workers 8]
//          [--drain-s 5] [--submit-rate 200] [--small-rounds 30] [--synchronous FULL]
//          [--fill-run 0]
//          [--db-small URI --db-large URI] [--pg-pid PID]
// With --db-small and --db-large (two fresh PostgreSQL databases, say; bench/scale.sh
// DRIVER=postgres makes them) each backlog goes there instead of a fresh SQLite file,
// and --pg-pid adds the cluster's CPU per job drained.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/proc_stats.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/temp_dir.h"

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using sluice::testing::Bearer;
using sluice::testing::Call;
using sluice::testing::ServerOptions;
using sluice::testing::ServerProcess;

namespace {

using sluice::bench::CpuSeconds;
using sluice::bench::StatusMiB;
using sluice::bench::TreeCpuSeconds;
using sluice::bench::WriteBytes;

double Seconds(SteadyClock::time_point since) {
  return std::chrono::duration<double>(SteadyClock::now() - since).count();
}

// The median: the mean of the two middle values of an even count.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t at = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[at];
}

struct Options {
  int jobs = 1'000'000, tenants = 10'000, small_jobs = 1000, small_tenants = 1000;
  int samples = 900, workers = 8, submit_rate = 200, small_rounds = 30;
  int rounds = 3;  // alternating rounds of both backlogs
  // Jobs per tenant per turn of the fill (FillJobs): 0, each tenant's share in one go.
  int fill_run = 0;
  std::string synchronous = "FULL";  // sluiced --synchronous
  double drain_s = 5;
  // Databases (sluiced --db): empty, a fresh SQLite file each; else e.g. two fresh
  // PostgreSQL databases. pg_pid: the PostgreSQL postmaster, whose tree's CPU is
  // reported beside sluiced's (0: none).
  std::string db_small, db_large;
  int pg_pid = 0;
};

struct Figures {
  int jobs = 0, tenants = 0;
  double fill_s = 0, rss_mib = 0, hwm_mib = 0;
  double lease_p50_ms = 0, lease_p99_ms = 0;
  double drained_per_s = 0, cpu_us_per_job = 0, pg_cpu_us_per_job = 0;
  double kib_written_per_job = 0;  // sluiced's write_bytes (WAL and checkpoints)
  double submit_p50_ms = 0, submit_p99_ms = 0;
  int64_t submits = 0, submit_failures = 0;
  // Where the submits' tail is: % of submits over 5 ms at the client and inside sluiced
  // (its request-duration histogram), and % of WAL flushes over 5 ms.
  double submit_over_5ms_pct = 0, server_submit_over_5ms_pct = 0, flush_over_5ms_pct = 0;
  int drain_rounds = 0;
  int64_t drained = 0;
  // The writer while draining: commits per second, operations per commit, and the mean
  // COMMIT and WAL flush in milliseconds.
  double commits_per_s = 0, ops_per_commit = 0, commit_ms = 0, flush_ms = 0;
  double restart_s = 0;
};

constexpr const char* kAdmin = "scale-bench-admin";

ServerOptions ServerFor(const std::string& db, const std::string& synchronous) {
  ServerOptions options;
  options.admin_token = kAdmin;
  options.db_path = db;
  options.extra_args = {"--synchronous", synchronous};
  return options;
}

// Puts `jobs` jobs spread evenly over the tenants of `tokens` (one submit token per
// tenant), in batches of at most 1000, from 4 connections. `run`: jobs per tenant per
// turn of the tenants (0: each tenant's whole share in one go, its jobs admitted
// together; 1: tenants interleaved, job k of every tenant before job k + 1 of any).
void FillJobs(const ServerProcess& server, const std::vector<std::string>& tokens, int jobs,
              int run) {
  struct Batch {
    int tenant, first, n;
  };
  const int tenants = static_cast<int>(tokens.size());
  std::vector<int> share(static_cast<size_t>(tenants)), sent(static_cast<size_t>(tenants), 0);
  for (int i = 0; i < tenants; ++i) {
    share[static_cast<size_t>(i)] = jobs / tenants + (i < jobs % tenants ? 1 : 0);
  }
  const int step = run > 0 ? std::min(run, 1000) : 1000;
  std::vector<Batch> batches;
  for (bool more = true; more;) {
    more = false;
    for (int i = 0; i < tenants; ++i) {
      auto at = static_cast<size_t>(i);
      while (sent[at] < share[at]) {
        const int n = std::min(step, share[at] - sent[at]);
        batches.push_back({i, sent[at], n});
        sent[at] += n;
        if (run > 0) break;  // the next turn of the tenants
      }
      more = more || sent[at] < share[at];
    }
  }
  std::atomic<size_t> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto http = server.Client(kAdmin);
      for (size_t b; (b = next.fetch_add(1)) < batches.size();) {
        const Batch& batch = batches[b];
        json items = json::array();
        for (int k = 0; k < batch.n; ++k) items.push_back({{"payload", {{"n", batch.first + k}}}});
        auto r = Call(*http, "POST", "/v1/queues/scale/jobs:batch", {{"jobs", items}},
                      Bearer(tokens[static_cast<size_t>(batch.tenant)]));
        if (r.status != 200) {
          ++failures;
        } else {
          for (const json& item : r.body["results"]) failures += item["status"] != 202;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failures > 0) {
    std::fprintf(stderr, "filling: %d failures\n", failures.load());
    std::exit(2);
  }
}

// The queue, a token per tenant and `jobs` jobs spread evenly over the tenants. Returns
// the submit tokens.
std::vector<std::string> Fill(const ServerProcess& server, int jobs, int tenants, int run) {
  auto admin = server.Client(kAdmin);
  auto put = Call(*admin, "PUT", "/v1/admin/queues/scale",
                  {{"rate", 1'000'000}, {"capacity", 1'000'000}, {"burst", 1000}}, Bearer(kAdmin));
  if (put.status != 200) {
    std::fprintf(stderr, "PUT queue: %d %s\n", put.status, put.body.dump().c_str());
    std::exit(2);
  }
  std::vector<std::string> tokens(static_cast<size_t>(tenants));
  std::atomic<int> next{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto http = server.Client(kAdmin);
      for (int i; (i = next.fetch_add(1)) < tenants;) {
        auto r =
            Call(*http, "POST", "/v1/admin/tokens",
                 {{"scopes", {"submit"}}, {"tenant", "t" + std::to_string(i)}}, Bearer(kAdmin));
        if (r.status != 201) {
          ++failures;
          continue;
        }
        tokens[static_cast<size_t>(i)] = r.body["token"];
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failures > 0) {
    std::fprintf(stderr, "tokens: %d failures\n", failures.load());
    std::exit(2);
  }
  FillJobs(server, tokens, jobs, run);
  return tokens;
}

void MeasureLeases(const ServerProcess& server, const std::string& work, int samples, Figures& f) {
  auto http = server.Client(work);
  std::vector<double> ms;
  for (int i = 0; i < samples; ++i) {
    const auto start = SteadyClock::now();
    auto r = Call(*http, "POST", "/v1/leases",
                  {{"queues", {"scale"}}, {"max_jobs", 1}, {"wait_ms", 0}}, Bearer(work));
    ms.push_back(Seconds(start) * 1000);
    if (r.status != 200 || r.body["jobs"].size() != 1) {
      std::fprintf(stderr, "lease: %d %s\n", r.status, r.body.dump().c_str());
      std::exit(2);
    }
    const json& job = r.body["jobs"][0];
    auto done = Call(*http, "POST", "/v1/jobs/" + job["id"].get<std::string>() + "/complete",
                     {{"lease_id", job["lease_id"]}}, Bearer(work));
    if (done.status != 200) {
      std::fprintf(stderr, "complete: %d %s\n", done.status, done.body.dump().c_str());
      std::exit(2);
    }
  }
  f.lease_p50_ms = Percentile(ms, 0.5);
  f.lease_p99_ms = Percentile(ms, 0.99);
}

// The writer's counters from /metrics (sums and counts of its histograms).
struct WriterStats {
  double commits = 0, operations = 0, commit_s = 0, flushes = 0, flush_s = 0;
  // The tails, from the histograms' buckets: flushes that took more than 5 ms, and
  // single-job submits (202) that took more than 5 ms inside sluiced (request read to
  // response written), beside all of them.
  double flushes_within_5ms = 0, submits = 0, submits_within_5ms = 0;

  // Adds what happened between two scrapes.
  void AddSince(const WriterStats& before, const WriterStats& after) {
    commits += after.commits - before.commits;
    operations += after.operations - before.operations;
    commit_s += after.commit_s - before.commit_s;
    flushes += after.flushes - before.flushes;
    flush_s += after.flush_s - before.flush_s;
    flushes_within_5ms += after.flushes_within_5ms - before.flushes_within_5ms;
    submits += after.submits - before.submits;
    submits_within_5ms += after.submits_within_5ms - before.submits_within_5ms;
  }
};

WriterStats ScrapeWriter(const ServerProcess& server) {
  auto http = server.Client(kAdmin);
  auto r = http->Get("/metrics", Bearer(kAdmin));
  WriterStats w;
  if (!r || r->status != 200) return w;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    auto value = [&](const char* name, double& out) {
      const std::string prefix = std::string(name) + " ";
      if (line.rfind(prefix, 0) == 0) out = std::stod(line.substr(prefix.size()));
    };
    value("sluice_storage_commit_seconds_count", w.commits);
    value("sluice_storage_commit_seconds_sum", w.commit_s);
    value("sluice_storage_commit_batch_size_sum", w.operations);
    value("sluice_storage_flush_seconds_count", w.flushes);
    value("sluice_storage_flush_seconds_sum", w.flush_s);
    value("sluice_storage_flush_seconds_bucket{le=\"0.005\"}", w.flushes_within_5ms);
    const char* submit =
        "sluice_http_request_duration_seconds_%s{method=\"POST\",route=\"/v1/queues/{}/"
        "jobs\",status=\"202\"%s}";
    char name[256];
    std::snprintf(name, sizeof name, submit, "count", "");
    value(name, w.submits);
    std::snprintf(name, sizeof name, submit, "bucket", ",le=\"0.005\"");
    value(name, w.submits_within_5ms);
  }
  return w;
}

// What the drains of one backlog added up to: only the time, CPU and submits while
// workers drained count (not the refills between rounds).
struct Drain {
  int64_t drained = 0;
  double seconds = 0, cpu_seconds = 0, pg_cpu_seconds = 0, bytes_written = 0;
  WriterStats writer;  // during the drains
  std::vector<double> submit_ms;
  int64_t submit_failures = 0;
};

// Workers drain until the backlog is empty (every worker got an empty answer) or
// `max_s` passed, while one submitter posts single jobs at --submit-rate per second.
void MeasureDrain(const ServerProcess& server, const std::string& work,
                  const std::string& submit_token, const Options& o, double max_s, Drain& d) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> drained{0};
  const WriterStats writer_before = ScrapeWriter(server);
  const double cpu_before = CpuSeconds(server.pid());
  const double written_before = WriteBytes(server.pid());
  const double pg_before = o.pg_pid > 0 ? TreeCpuSeconds(o.pg_pid) : 0;
  const auto start = SteadyClock::now();
  std::vector<std::thread> workers;
  for (int w = 0; w < o.workers; ++w) {
    workers.emplace_back([&] {
      auto http = server.Client(work);
      json acks = json::array();
      while (Seconds(start) < max_s) {
        json body = {{"queues", {"scale"}}, {"max_jobs", 8}, {"wait_ms", 0}};
        if (!acks.empty()) body["acks"] = acks;
        auto r = Call(*http, "POST", "/v1/leases", body, Bearer(work));
        if (r.status != 200) continue;
        drained += static_cast<int64_t>(acks.size());
        acks = json::array();
        for (const json& j : r.body["jobs"]) {
          acks.push_back({{"id", j["id"]}, {"lease_id", j["lease_id"]}, {"outcome", "succeeded"}});
        }
        if (r.body["jobs"].empty()) break;  // drained
      }
      if (!acks.empty()) {
        auto r = Call(*http, "POST", "/v1/acks", {{"acks", acks}}, Bearer(work));
        if (r.status == 200) drained += static_cast<int64_t>(acks.size());
      }
    });
  }
  std::thread submitter([&] {
    auto http = server.Client(submit_token);
    const auto gap = std::chrono::microseconds(1'000'000 / std::max(1, o.submit_rate));
    auto next = SteadyClock::now();
    while (!stop) {
      std::this_thread::sleep_until(next);  // pacing the load, not waiting for a result
      next += gap;
      const auto t0 = SteadyClock::now();
      auto r = Call(*http, "POST", "/v1/queues/scale/jobs", {{"payload", 1}}, Bearer(submit_token));
      d.submit_ms.push_back(Seconds(t0) * 1000);
      if (r.status != 202) ++d.submit_failures;
    }
  });
  for (auto& w : workers) w.join();
  const double s = Seconds(start);
  const double cpu_after = CpuSeconds(server.pid());
  const double written_after = WriteBytes(server.pid());
  const double pg_after = o.pg_pid > 0 ? TreeCpuSeconds(o.pg_pid) : 0;
  stop = true;
  submitter.join();
  d.writer.AddSince(writer_before, ScrapeWriter(server));
  d.drained += drained.load();
  d.seconds += s;
  d.cpu_seconds += cpu_after - cpu_before;
  d.bytes_written += written_after - written_before;
  d.pg_cpu_seconds += pg_after - pg_before;
}

// Drains the backlog, then (while drain time is left and `rounds` allow) fills it again
// with `jobs` jobs over the same tenants and drains again: a small backlog drains in a
// few tens of milliseconds, too short a window to tell its CPU per job or a submit p99.
void MeasureDrains(const ServerProcess& server, const std::string& work,
                   const std::vector<std::string>& tokens, int jobs, int rounds, const Options& o,
                   Figures& f) {
  Drain d;
  int r = 0;
  for (; r < rounds && d.seconds < o.drain_s; ++r) {
    if (r > 0) FillJobs(server, tokens, jobs, o.fill_run);
    MeasureDrain(server, work, tokens.front(), o, o.drain_s - d.seconds, d);
  }
  f.drain_rounds = r;
  f.drained = d.drained;
  f.drained_per_s = static_cast<double>(d.drained) / std::max(1e-9, d.seconds);
  f.cpu_us_per_job = d.cpu_seconds * 1e6 / static_cast<double>(std::max<int64_t>(1, d.drained));
  f.kib_written_per_job =
      d.bytes_written / 1024 / static_cast<double>(std::max<int64_t>(1, d.drained));
  f.pg_cpu_us_per_job =
      d.pg_cpu_seconds * 1e6 / static_cast<double>(std::max<int64_t>(1, d.drained));
  f.submit_p50_ms = Percentile(d.submit_ms, 0.5);
  f.submit_p99_ms = Percentile(d.submit_ms, 0.99);
  f.submits = static_cast<int64_t>(d.submit_ms.size());
  f.submit_over_5ms_pct = 100.0 *
                          static_cast<double>(std::count_if(d.submit_ms.begin(), d.submit_ms.end(),
                                                            [](double ms) { return ms > 5; })) /
                          static_cast<double>(std::max<size_t>(1, d.submit_ms.size()));
  f.server_submit_over_5ms_pct =
      100.0 * (d.writer.submits - d.writer.submits_within_5ms) / std::max(1.0, d.writer.submits);
  f.flush_over_5ms_pct =
      100.0 * (d.writer.flushes - d.writer.flushes_within_5ms) / std::max(1.0, d.writer.flushes);
  f.submit_failures = d.submit_failures;
  f.commits_per_s = d.writer.commits / std::max(1e-9, d.seconds);
  f.ops_per_commit = d.writer.operations / std::max(1.0, d.writer.commits);
  f.commit_ms = d.writer.commit_s * 1000 / std::max(1.0, d.writer.commits);
  f.flush_ms = d.writer.flush_s * 1000 / std::max(1.0, d.writer.flushes);
}

// One backlog on its own sluiced: filled once, then measured in rounds (leases, then
// drains), then stopped and restarted. A backlog that a round drains to empty (the small
// one) is filled again at the start of the next round.
class Backlog {
 public:
  Backlog(int jobs, int tenants, int refills, const std::string& db_uri,
          const std::string& synchronous, int fill_run)
      : jobs_(jobs), refills_(refills), synchronous_(synchronous) {
    db_ = db_uri.empty() ? dir_.path() + "/scale.db" : db_uri;
    setup_.jobs = jobs;
    setup_.tenants = tenants;
    server_.emplace(ServerFor(db_, synchronous_));
    const auto fill_start = SteadyClock::now();
    tokens_ = Fill(*server_, jobs, tenants, fill_run);
    setup_.fill_s = Seconds(fill_start);
    setup_.rss_mib = StatusMiB(server_->pid(), "VmRSS");
    auto admin = server_->Client(kAdmin);
    work_ = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, Bearer(kAdmin))
                .body["token"];
  }

  // One round: the lease samples, then the drains. Its figures, with the backlog's own.
  Figures Round(const Options& o) {
    if (rounds_++ > 0 && refills_ > 1) FillJobs(*server_, tokens_, jobs_, o.fill_run);
    Figures f = setup_;
    MeasureLeases(*server_, work_, o.samples, f);
    MeasureDrains(*server_, work_, tokens_, jobs_, refills_, o, f);
    return f;
  }

  // Peak memory, then a restart on the same file: spawn to the first lease that
  // returns a job. Sets them on `f`.
  void Finish(Figures& f) {
    f.hwm_mib = StatusMiB(server_->pid(), "VmHWM");
    server_->Stop(SIGTERM);
    server_.reset();
    const auto spawn = SteadyClock::now();
    ServerProcess again(ServerFor(db_, synchronous_));
    auto http = again.Client(work_);
    for (;;) {
      auto r = Call(*http, "POST", "/v1/leases",
                    {{"queues", {"scale"}}, {"max_jobs", 1}, {"wait_ms", 1000}}, Bearer(work_));
      if (r.status == 200 && r.body["jobs"].size() == 1) break;
      if (Seconds(spawn) > 60) {
        std::fprintf(stderr, "restart: no job leased within 60 s\n");
        std::exit(2);
      }
    }
    f.restart_s = Seconds(spawn);
  }

 private:
  const int jobs_, refills_;
  sluice::testing::TempDir dir_;
  const std::string synchronous_;
  std::string db_, work_;
  std::optional<ServerProcess> server_;
  std::vector<std::string> tokens_;
  Figures setup_;
  int rounds_ = 0;
};

json ToJson(const Figures& f) {
  return {{"jobs", f.jobs},
          {"tenants", f.tenants},
          {"fill_s", f.fill_s},
          {"rss_mib", f.rss_mib},
          {"hwm_mib", f.hwm_mib},
          {"lease_p50_ms", f.lease_p50_ms},
          {"lease_p99_ms", f.lease_p99_ms},
          {"drained_per_s", f.drained_per_s},
          {"cpu_us_per_job", f.cpu_us_per_job},
          {"kib_written_per_job", f.kib_written_per_job},
          {"pg_cpu_us_per_job", f.pg_cpu_us_per_job},
          {"submit_p50_ms", f.submit_p50_ms},
          {"submit_p99_ms", f.submit_p99_ms},
          {"submit_over_5ms_pct", f.submit_over_5ms_pct},
          {"server_submit_over_5ms_pct", f.server_submit_over_5ms_pct},
          {"flush_over_5ms_pct", f.flush_over_5ms_pct},
          {"submits", f.submits},
          {"submit_failures", f.submit_failures},
          {"drain_rounds", f.drain_rounds},
          {"drained", f.drained},
          {"commits_per_s", f.commits_per_s},
          {"ops_per_commit", f.ops_per_commit},
          {"commit_ms", f.commit_ms},
          {"flush_ms", f.flush_ms},
          {"restart_s", f.restart_s}};
}

// The figures measured in every round: the table's rows, in order, each with its JSON
// key; `only` says when a row is printed (every figure's median is taken).
struct RoundFigure {
  const char* label;
  const char* key;
  double Figures::*field;
  enum Only { kAlways, kPostgres, kWriter } only = kAlways;
};
const RoundFigure kRoundFigures[] = {
    {"lease (max_jobs 1) p50 ms", "lease_p50_ms", &Figures::lease_p50_ms},
    {"lease (max_jobs 1) p99 ms", "lease_p99_ms", &Figures::lease_p99_ms},
    {"drain jobs/s", "drained_per_s", &Figures::drained_per_s},
    {"sluiced CPU us per job drained", "cpu_us_per_job", &Figures::cpu_us_per_job},
    {"sluiced KiB written per job drained", "kib_written_per_job", &Figures::kib_written_per_job},
    {"PostgreSQL CPU us per job drained", "pg_cpu_us_per_job", &Figures::pg_cpu_us_per_job,
     RoundFigure::kPostgres},
    {"submit p50 ms while draining", "submit_p50_ms", &Figures::submit_p50_ms},
    {"submit p99 ms while draining", "submit_p99_ms", &Figures::submit_p99_ms},
    {"% submits over 5 ms, at the client", "submit_over_5ms_pct", &Figures::submit_over_5ms_pct},
    {"% submits over 5 ms, in sluiced", "server_submit_over_5ms_pct",
     &Figures::server_submit_over_5ms_pct},
    {"commits/s while draining", "commits_per_s", &Figures::commits_per_s, RoundFigure::kWriter},
    {"operations per commit", "ops_per_commit", &Figures::ops_per_commit, RoundFigure::kWriter},
    {"COMMIT ms (mean)", "commit_ms", &Figures::commit_ms, RoundFigure::kWriter},
    {"WAL flush ms (mean)", "flush_ms", &Figures::flush_ms, RoundFigure::kWriter},
    {"% WAL flushes over 5 ms", "flush_over_5ms_pct", &Figures::flush_over_5ms_pct,
     RoundFigure::kWriter},
};

// The median of each figure measured in rounds; counts are summed, and what is measured
// once per backlog (its fill, memory) is the first round's.
Figures Medians(const std::vector<Figures>& rounds) {
  Figures m = rounds.front();
  for (const RoundFigure& rf : kRoundFigures) {
    std::vector<double> v;
    for (const Figures& f : rounds) v.push_back(f.*rf.field);
    m.*rf.field = Median(v);
  }
  m.submits = m.submit_failures = m.drained = 0;
  m.drain_rounds = 0;
  for (const Figures& f : rounds) {
    m.submits += f.submits;
    m.submit_failures += f.submit_failures;
    m.drained += f.drained;
    m.drain_rounds += f.drain_rounds;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App cli{"sluiced's lease, intake and memory with a small and a large backlog"};
  cli.add_option("--jobs", o.jobs)->check(CLI::PositiveNumber);
  cli.add_option("--tenants", o.tenants)->check(CLI::PositiveNumber);
  cli.add_option("--small-jobs", o.small_jobs)->check(CLI::PositiveNumber);
  cli.add_option("--small-tenants", o.small_tenants)->check(CLI::PositiveNumber);
  cli.add_option("--samples", o.samples)->check(CLI::PositiveNumber);
  cli.add_option("--workers", o.workers)->check(CLI::PositiveNumber);
  cli.add_option("--rounds", o.rounds, "rounds, alternating between the backlogs")
      ->check(CLI::PositiveNumber);
  cli.add_option("--drain-s", o.drain_s, "seconds of draining per backlog per round")
      ->check(CLI::PositiveNumber);
  cli.add_option("--submit-rate", o.submit_rate)->check(CLI::PositiveNumber);
  cli.add_option("--synchronous", o.synchronous, "sluiced --synchronous (SQLite): FULL or NORMAL")
      ->check(CLI::IsMember({"FULL", "NORMAL"}));
  cli.add_option("--small-rounds", o.small_rounds)->check(CLI::PositiveNumber);
  cli.add_option("--fill-run", o.fill_run,
                 "jobs per tenant per turn of the fill: 0 (default), each tenant's jobs in "
                 "one go; 1, tenants interleaved")
      ->check(CLI::NonNegativeNumber);
  cli.add_option("--db-small", o.db_small, "sluiced --db for the small backlog (a fresh one)");
  cli.add_option("--db-large", o.db_large, "sluiced --db for the large backlog (a fresh one)");
  cli.add_option("--pg-pid", o.pg_pid, "PostgreSQL's postmaster: its CPU is reported too");
  CLI11_PARSE(cli, argc, argv);
  // Each sample leases a job and completes it: the small backlog must outlast them.
  if (o.samples >= o.small_jobs || o.samples >= o.jobs) {
    std::fprintf(stderr, "--samples must be below --small-jobs and --jobs\n");
    return 2;
  }

  // Both backlogs stay up; the rounds alternate between them (odd rounds the small one
  // first), so that a change in the host's speed falls on both.
  Backlog small_backlog(o.small_jobs, o.small_tenants, o.small_rounds, o.db_small, o.synchronous,
                        o.fill_run);
  Backlog large_backlog(o.jobs, o.tenants, 1, o.db_large, o.synchronous, o.fill_run);
  std::vector<Figures> smalls, larges;
  for (int r = 0; r < o.rounds; ++r) {
    if (r % 2 == 0) {
      smalls.push_back(small_backlog.Round(o));
      larges.push_back(large_backlog.Round(o));
    } else {
      larges.push_back(large_backlog.Round(o));
      smalls.push_back(small_backlog.Round(o));
    }
  }
  Figures small = Medians(smalls);
  Figures large = Medians(larges);
  small_backlog.Finish(small);
  large_backlog.Finish(large);

  // Each row: the medians of the rounds, and the median of the rounds' ratios.
  std::printf("%d rounds, alternating; medians of the rounds, and of their ratios\n", o.rounds);
  std::printf("%-36s %14s %14s %8s\n", "", "small", "large", "ratio");
  auto single = [](const char* what, double a, double b) {  // measured once, not in rounds
    std::printf("%-36s %14.2f %14.2f %8.2f\n", what, a, b, a > 0 ? b / a : 0);
  };
  std::printf("%-36s %14s %14s\n", "backlog (jobs / tenants)",
              (std::to_string(small.jobs) + "/" + std::to_string(small.tenants)).c_str(),
              (std::to_string(large.jobs) + "/" + std::to_string(large.tenants)).c_str());
  single("fill s", small.fill_s, large.fill_s);
  std::printf("%-36s %14s %14s\n", "drained (jobs / drains)",
              (std::to_string(small.drained) + "/" + std::to_string(small.drain_rounds)).c_str(),
              (std::to_string(large.drained) + "/" + std::to_string(large.drain_rounds)).c_str());
  const bool writer = small.commits_per_s > 0 || large.commits_per_s > 0;  // SQLite's metrics
  json ratios = json::object();
  for (const RoundFigure& rf : kRoundFigures) {
    if ((rf.only == RoundFigure::kPostgres && o.pg_pid <= 0) ||
        (rf.only == RoundFigure::kWriter && !writer)) {
      continue;
    }
    std::vector<double> each;
    for (size_t r = 0; r < smalls.size(); ++r) {
      if (smalls[r].*rf.field > 0) each.push_back(larges[r].*rf.field / (smalls[r].*rf.field));
    }
    const double ratio = Median(each);
    ratios[rf.key] = ratio;
    std::printf("%-36s %14.2f %14.2f %8.2f\n", rf.label, small.*rf.field, large.*rf.field, ratio);
  }
  single("RSS MiB filled", small.rss_mib, large.rss_mib);
  single("RSS MiB peak", small.hwm_mib, large.hwm_mib);
  single("restart to first lease s", small.restart_s, large.restart_s);
  std::printf(
      "rounds: lease p99 ms small/large, CPU us per job small/large, submit p99 ms "
      "small/large\n");
  json rounds = json::array();
  for (size_t r = 0; r < smalls.size(); ++r) {
    std::printf("  %zu: %.2f/%.2f  %.1f/%.1f  %.2f/%.2f\n", r + 1, smalls[r].lease_p99_ms,
                larges[r].lease_p99_ms, smalls[r].cpu_us_per_job, larges[r].cpu_us_per_job,
                smalls[r].submit_p99_ms, larges[r].submit_p99_ms);
    rounds.push_back({{"small", ToJson(smalls[r])}, {"large", ToJson(larges[r])}});
  }
  std::printf("%s\n", json{{"small", ToJson(small)},
                           {"large", ToJson(large)},
                           {"ratios", ratios},
                           {"rounds", rounds}}
                          .dump()
                          .c_str());
  return small.submit_failures + large.submit_failures == 0 ? 0 : 1;
}
