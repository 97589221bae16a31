// End-to-end throughput of a real sluiced, on either storage driver (bench/drivers.sh),
// or of several sluiced on one PostgreSQL database (bench/cluster.sh): S submitting
// connections submit N single jobs for T tenants over keep-alive HTTP while W worker threads
// long-poll POST /v1/leases and complete the jobs they get on their own connection, as
// --ack-mode says: `lease` (the default) carries the acks of a lease's jobs on the
// worker's next lease request (or, once every job left is held so, on one POST
// /v1/acks); `batch` sends one POST /v1/acks per lease's jobs; `single` one POST
// /v1/jobs/{id}/complete per job. With --server URL (repeated), the servers are already running and
// share one database: submitter s talks to server s mod K, worker w to server w mod K
// (each thread keeps its one connection), the queue and tokens are set up through the
// first; the exactly-once check is the same. The queue's rate is far above what the
// machine can do, so the shaper never holds a job back: the figures are the server's and
// its store's.
//
// Prints one JSON object:
//   submit_jobs_per_s   202s per second from the first submit sent to the last 202 read;
//   e2e_jobs_per_s      completions per second from the first submit sent to the last
//                       completion's 200 read;
//   latency_ms          submit → complete per job: from just before its submit was sent
//                       (carried in the payload as microseconds since the start) to its
//                       completion's 200, p50/p90/p99/max;
//   sluiced_cpu_us_per_job  sluiced's utime + stime (/proc/<pid>/stat, all threads) over
//                       the run, per completed job (with --server: the sum over the
//                       --sluiced-pid processes, if given); with --pg-pid the same for the
//                       PostgreSQL cluster (the postmaster, its children, and the
//                       children it reaped during the run);
//   check               every 202'd job completed exactly once: duplicates, missing
//                       and unknown completions, non-202 submits and failed completes
//                       (a per-item ack result other than succeeded counts as one) are
//                       counted, and any of them makes the exit status 1.
//
// Submitters: S keep-alive connections on one event-loop thread (--submit-client async,
// bench/async_submitters.h), or S threads each blocking in cpp-httplib (threads), one
// submit in flight per connection either way.
//
// Usage: sluice-bench-e2e [--db PATH|postgres://...] [--jobs N] [--tenants T]
//          [--submitters S] [--submit-client async|threads] [--workers W] [--max-jobs 8]
//          [--ack-mode single|batch|lease]
//          [--pg-pid PID]
//          [--server-arg FLAG ...]
//        sluice-bench-e2e --server URL [--server URL ...] [--sluiced-pid PID ...]
//          [--queue NAME] [same load flags]
// The admin token is SLUICE_ADMIN_TOKEN if set, else a fresh random one (with --server
// it must be set: the servers' own).
#include <dirent.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/async_submitters.h"
#include "tests/testutil/server_process.h"

using nlohmann::json;
using sluice::testing::Call;
using sluice::testing::ServerOptions;
using sluice::testing::ServerProcess;
using SteadyClock = std::chrono::steady_clock;

namespace {

// The fields of /proc/<pid>/stat after the command name (which may hold spaces);
// empty if the process is gone. fields[0] is field 3 (state).
std::vector<std::string> StatFields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// utime + stime of a process (fields 14 and 15), in clock ticks; with `reaped`, also
// cutime + cstime (16, 17): the children it has waited for.
long long CpuTicks(pid_t pid, bool reaped = false) {
  std::vector<std::string> f = StatFields(pid);
  if (f.size() < 15) return 0;
  long long t = std::stoll(f[11]) + std::stoll(f[12]);
  if (reaped) t += std::stoll(f[13]) + std::stoll(f[14]);
  return t;
}

// CPU of a PostgreSQL cluster: its postmaster (with the children it reaped) and its
// live children (backends and auxiliary processes are all the postmaster's children).
// A backend that exits between two samples moves from the live sum into the
// postmaster's reaped sum, so the difference of two samples is what the cluster spent.
long long ClusterTicks(pid_t postmaster) {
  long long t = CpuTicks(postmaster, true);
  DIR* proc = opendir("/proc");
  if (!proc) return t;
  const std::string parent = std::to_string(postmaster);
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::vector<std::string> f = StatFields(static_cast<pid_t>(pid));
    if (f.size() > 12 && f[1] == parent) t += CpuTicks(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return t;
}

double Pct(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// `v` rounded to `decimals` places (a power of ten divides exactly: no 7.890000000000001).
double Round(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

std::string RandomToken() {
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return std::string("bench-admin-") + buf;
}

// A keep-alive client with TCP_NODELAY (NOTES.md pitfall 1) for "http://host:port".
std::unique_ptr<httplib::Client> ClientFor(const std::string& url, const std::string& token = "") {
  auto c = std::make_unique<httplib::Client>(url);
  c->set_tcp_nodelay(true);
  c->set_keep_alive(true);
  c->set_read_timeout(60, 0);
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  return c;
}

struct Completion {
  int64_t index;
  std::string id;
  double latency_ms;
  double at_us;  // since the start
};

}  // namespace

int main(int argc, char** argv) {
  std::string db;
  int64_t jobs = 20000;
  int tenants = 10, submitters = 8, workers = 8, max_jobs = 8, wait_ms = 1000;
  int stall_s = 60;
  pid_t pg_pid = 0;
  std::vector<std::string> server_args, server_urls;
  std::vector<pid_t> sluiced_pids;
  std::string queue = "e2e";
  std::string ack_mode = "lease";
  std::string submit_client = "async";
  CLI::App cli{"sluice end-to-end throughput benchmark (submit, lease, complete)"};
  cli.add_option("--db", db, "SQLite file or postgres:// URI (default: a fresh SQLite file)");
  cli.add_option("--jobs", jobs, "jobs to submit")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cli.add_option("--tenants", tenants, "tenants (one submit token each)")
      ->check(CLI::Range(1, 10000));
  cli.add_option("--submitters", submitters, "submitting connections")->check(CLI::Range(1, 1024));
  cli.add_option("--workers", workers, "worker threads")->check(CLI::Range(1, 1024));
  cli.add_option("--max-jobs", max_jobs, "max_jobs of a lease")->check(CLI::Range(1, 1000));
  cli.add_option("--wait-ms", wait_ms, "wait_ms of a lease")->check(CLI::Range(0, 60000));
  cli.add_option("--ack-mode", ack_mode,
                 "how workers complete: lease (acks on the next lease request), batch (one "
                 "POST /v1/acks per lease), single (one complete per job)")
      ->check(CLI::IsMember({"single", "batch", "lease"}));
  cli.add_option("--submit-client", submit_client,
                 "how submitters send: async (--submitters connections on one event-loop "
                 "thread) or threads (one cpp-httplib client thread per connection)")
      ->check(CLI::IsMember({"async", "threads"}));
  cli.add_option("--stall-s", stall_s, "give up after this long without a completion")
      ->check(CLI::Range(1, 3600));
  cli.add_option("--pg-pid", pg_pid, "postmaster pid of the database's cluster, to count its CPU");
  cli.add_option("--server-arg", server_args, "extra flag for sluiced (repeat)")
      ->allow_extra_args(false);
  cli.add_option("--server", server_urls,
                 "URL of a running sluiced (repeat: several on one database); none: start one")
      ->allow_extra_args(false);
  cli.add_option("--sluiced-pid", sluiced_pids, "pid of a --server's sluiced, to count its CPU")
      ->allow_extra_args(false);
  cli.add_option("--queue", queue, "queue to create and use (with --server: a fresh name)");
  CLI11_PARSE(cli, argc, argv);

  const char* admin_env = std::getenv("SLUICE_ADMIN_TOKEN");
  const std::string admin_token = admin_env && *admin_env ? admin_env : RandomToken();
  std::unique_ptr<ServerProcess> own_server;  // only without --server
  if (server_urls.empty()) {
    if (!sluiced_pids.empty()) {
      std::fprintf(stderr, "--sluiced-pid goes with --server\n");
      return 2;
    }
    ServerOptions options;
    options.admin_token = admin_token;
    options.db_path = db;
    options.extra_args = server_args;
    own_server = std::make_unique<ServerProcess>(options);
    server_urls.push_back(own_server->url());
    sluiced_pids.push_back(own_server->pid());
  } else if (!admin_env || !*admin_env) {
    std::fprintf(stderr, "--server needs SLUICE_ADMIN_TOKEN (the servers' admin token)\n");
    return 2;
  } else if (!db.empty() || !server_args.empty()) {
    std::fprintf(stderr, "--db and --server-arg start a server: not with --server\n");
    return 2;
  }
  const bool on_pg = db.rfind("postgres://", 0) == 0 || db.rfind("postgresql://", 0) == 0;
  const size_t n_servers = server_urls.size();
  auto url_of = [&](int thread) { return server_urls[static_cast<size_t>(thread) % n_servers]; };
  auto sluiced_ticks = [&] {
    long long t = 0;
    for (pid_t p : sluiced_pids) t += CpuTicks(p);
    return t;
  };

  // The queue and the tokens, through the first server (the others read the same database).
  auto admin = ClientFor(server_urls[0], admin_token);
  auto put = Call(*admin, "PUT", "/v1/admin/queues/" + queue,
                  {{"rate", 1000000}, {"capacity", 10000000}, {"burst", 1000}});
  if (put.status != 200) {
    std::fprintf(stderr, "PUT queue: %d %s\n", put.status, put.body.dump().c_str());
    return 2;
  }
  std::vector<std::string> submit_tokens;
  for (int t = 0; t < tenants; ++t) {
    auto r = Call(*admin, "POST", "/v1/admin/tokens",
                  {{"scopes", {"submit"}}, {"tenant", "t" + std::to_string(t)}});
    if (r.status != 201) {
      std::fprintf(stderr, "submit token: %d %s\n", r.status, r.body.dump().c_str());
      return 2;
    }
    submit_tokens.push_back(r.body["token"]);
  }
  auto wr = Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}, {"queues", {queue}}});
  if (wr.status != 201) {
    std::fprintf(stderr, "work token: %d %s\n", wr.status, wr.body.dump().c_str());
    return 2;
  }
  const std::string work_token = wr.body["token"];

  // Job i's id once its 202 came back (written by its submitter before `accepted` counts
  // it, read after every thread joined).
  std::vector<std::string> ids(static_cast<size_t>(jobs));
  std::atomic<int64_t> next{0}, accepted{0}, completed{0};
  std::atomic<int64_t> held{0};  // jobs done whose acks wait for a worker's next lease
  std::atomic<bool> submitting{true}, give_up{false};
  std::atomic<int64_t> last_submit_us{0}, last_progress_us{0};
  std::mutex mu;
  std::map<std::string, int64_t> submit_errors;    // GUARDED_BY(mu): status -> count
  std::map<std::string, int64_t> complete_errors;  // GUARDED_BY(mu)
  std::vector<Completion> completions;             // GUARDED_BY(mu)
  completions.reserve(static_cast<size_t>(jobs));
  int64_t leases = 0, empty_leases = 0, lease_errors = 0;  // GUARDED_BY(mu)

  const long hz = sysconf(_SC_CLK_TCK);
  const long long cpu0 = sluiced_ticks();
  const long long pg0 = pg_pid > 0 ? ClusterTicks(pg_pid) : 0;
  const auto t0 = SteadyClock::now();
  auto since_us = [t0] {
    return std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count();
  };

  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      auto c = ClientFor(url_of(w), work_token);
      const json lease = {{"queues", {queue}},
                          {"max_jobs", max_jobs},
                          {"wait_ms", wait_ms},
                          {"lease_ms", 600000},  // never lapses in a run
                          {"worker_id", "w" + std::to_string(w)}};
      const std::string lease_text = lease.dump();
      std::vector<Completion> mine;
      int64_t my_leases = 0, my_empty = 0;
      auto error = [&](std::map<std::string, int64_t>& into, const std::string& what) {
        std::lock_guard lock(mu);
        ++into[what];
      };
      auto answer = [](const httplib::Result& res) {
        return res ? std::to_string(res->status) + " " + res->body
                   : httplib::to_string(res.error());
      };
      // A job's completion, once its ack's 200 (or per-item result) was read.
      auto completed_one = [&](const json& j, double at) {
        const json& p = j["payload"];
        mine.push_back({p["i"].get<int64_t>(), j["id"].get<std::string>(),
                        (at - p["t_us"].get<double>()) / 1000.0, at});
        ++completed;
        last_progress_us = static_cast<int64_t>(at);
      };
      // The per-item results of a batch of acks of `done`: each must say succeeded.
      auto tally = [&](const std::vector<json>& done, const json& results, double at) {
        for (size_t i = 0; i < done.size(); ++i) {
          const json r = results.is_array() && i < results.size() ? results[i] : json();
          if (r.value("id", "") == done[i]["id"].get<std::string>() &&
              r.value("state", "") == "succeeded") {
            completed_one(done[i], at);
          } else {
            error(complete_errors, "ack result " + r.dump());
          }
        }
      };
      auto ack_of = [](const json& j) {
        return json{{"id", j["id"]},
                    {"lease_id", j["lease_id"]},
                    {"outcome", "succeeded"},
                    {"result", {{"ok", true}}}};
      };
      // Acks as one POST /v1/acks; false when the request itself failed (kept to retry).
      auto post_acks = [&](const std::vector<json>& done) {
        json acks = json::array();
        for (const json& j : done) acks.push_back(ack_of(j));
        auto res = c->Post("/v1/acks", json{{"acks", acks}}.dump(), "application/json");
        const double at = since_us();
        if (!res || res->status != 200) {
          error(complete_errors, "acks: " + answer(res));
          return false;
        }
        tally(done, json::parse(res->body)["results"], at);
        return true;
      };
      std::vector<json> pending;  // --ack-mode lease: done, acks not yet sent
      while (!give_up.load()) {
        if (!submitting.load() && completed.load() >= accepted.load()) break;
        // Every job left is done and held for a next lease that would find nothing:
        // send the acks now rather than long-poll for them.
        if (!pending.empty() && !submitting.load() &&
            completed.load() + held.load() >= accepted.load()) {
          const auto n = static_cast<int64_t>(pending.size());
          post_acks(pending);  // a failure is counted; its jobs stay missing
          held -= n;
          pending.clear();
          continue;
        }
        std::string body = lease_text;
        if (!pending.empty()) {
          // As sluice-worker does: a lease that carries acks does not long-poll, so
          // their results (the jobs' completions) are never held back by the wait.
          json with = lease;
          with["wait_ms"] = 0;
          with["acks"] = json::array();
          for (const json& j : pending) with["acks"].push_back(ack_of(j));
          body = with.dump();
        }
        auto res = c->Post("/v1/leases", body, "application/json");
        if (!res || res->status != 200) {
          std::lock_guard lock(mu);
          ++lease_errors;
          std::fprintf(stderr, "lease: %s\n", answer(res).c_str());
          if (lease_errors > 100) give_up = true;
          continue;  // pending acks ride on the next try
        }
        const double at = since_us();
        json answered = json::parse(res->body);
        if (!pending.empty()) {
          tally(pending, answered["acks"], at);
          held -= static_cast<int64_t>(pending.size());
          pending.clear();
        }
        const json& got = answered["jobs"];
        ++my_leases;
        if (got.empty()) ++my_empty;
        if (ack_mode == "lease") {
          for (const json& j : got) pending.push_back(j);
          held += static_cast<int64_t>(got.size());
        } else if (ack_mode == "batch" && !got.empty()) {
          post_acks(std::vector<json>(got.begin(), got.end()));
        } else {
          for (const json& j : got) {
            const std::string id = j["id"];
            json done_body = {{"lease_id", j["lease_id"]}, {"result", {{"ok", true}}}};
            auto done = c->Post(("/v1/jobs/" + id + "/complete").c_str(), done_body.dump(),
                                "application/json");
            const double done_at = since_us();
            if (!done || done->status != 200) {
              error(complete_errors, answer(done));
              continue;
            }
            completed_one(j, done_at);
          }
        }
        if (since_us() - static_cast<double>(last_progress_us.load()) > stall_s * 1e6 &&
            !submitting.load()) {
          give_up = true;  // nothing completed for too long: report what is missing
        }
      }
      std::lock_guard lock(mu);
      completions.insert(completions.end(), mine.begin(), mine.end());
      leases += my_leases;
      empty_leases += my_empty;
    });
  }

  std::vector<std::thread> subs;
  const std::string submit_path = "/v1/queues/" + queue + "/jobs";
  // Job i's submit answered: its id once 202, else the status (0: no answer) counted.
  // The id is read from the Location header (/v1/jobs/{id}), as a client that needs only
  // the id would; the body, the whole job, when there is no such header.
  auto submitted = [&](int64_t i, int status, const std::string& error, const std::string& body,
                       std::string_view location) {
    if (status != 202) {
      std::lock_guard lock(mu);
      ++submit_errors[status ? std::to_string(status) : error];
      return;
    }
    constexpr std::string_view kJobs = "/v1/jobs/";
    ids[static_cast<size_t>(i)] = location.starts_with(kJobs) && location.size() > kJobs.size()
                                      ? std::string(location.substr(kJobs.size()))
                                      : json::parse(body)["id"].get<std::string>();
    ++accepted;
    int64_t now = static_cast<int64_t>(since_us());
    int64_t prev = last_submit_us.load();
    while (now > prev && !last_submit_us.compare_exchange_weak(prev, now)) {
    }
  };
  auto submit_body = [&](int64_t i) {
    return json{{"payload", {{"i", i}, {"t_us", since_us()}}}}.dump();
  };
  if (submit_client == "async") {
    std::vector<sluice::bench::SubmitTarget> targets;
    for (int s = 0; s < submitters; ++s) targets.push_back(sluice::bench::ParseTarget(url_of(s)));
    subs.emplace_back([&, targets] {
      sluice::bench::AsyncSubmitters driver(
          targets, submitters, submit_path, next, jobs,
          [&](int64_t i, std::string& token, std::string& body) {
            token = submit_tokens[static_cast<size_t>(i % tenants)];
            body = submit_body(i);
          },
          [&](int64_t i, int status, const std::string& body, std::string_view location) {
            if (i >= 0) return submitted(i, status, body, body, location);
            std::lock_guard lock(mu);
            ++submit_errors["connect: " + body];  // a connection that never opened
          });
      driver.Run();
    });
  } else {
    for (int s = 0; s < submitters; ++s) {
      subs.emplace_back([&, s] {
        auto c = ClientFor(url_of(s));
        for (int64_t i; (i = next.fetch_add(1)) < jobs;) {
          httplib::Headers auth = {
              {"Authorization", "Bearer " + submit_tokens[static_cast<size_t>(i % tenants)]}};
          auto res = c->Post(submit_path.c_str(), auth, submit_body(i), "application/json");
          submitted(i, res ? res->status : 0, res ? "" : httplib::to_string(res.error()),
                    res ? res->body : "", res ? res->get_header_value("Location") : "");
        }
      });
    }
  }
  for (auto& t : subs) t.join();
  last_progress_us = static_cast<int64_t>(since_us());
  submitting = false;
  for (auto& t : pool) t.join();

  const long long cpu1 = sluiced_ticks();
  const long long pg1 = pg_pid > 0 ? ClusterTicks(pg_pid) : 0;

  // The check: every accepted job completed exactly once, nothing else completed.
  std::vector<int> times_completed(static_cast<size_t>(jobs), 0);
  int64_t duplicates = 0, unknown = 0, missing = 0;
  std::vector<double> latencies;
  double last_completion_us = 0;
  for (const Completion& c : completions) {
    if (c.index < 0 || c.index >= jobs || ids[static_cast<size_t>(c.index)] != c.id) {
      ++unknown;
      continue;
    }
    if (++times_completed[static_cast<size_t>(c.index)] > 1) ++duplicates;
    latencies.push_back(c.latency_ms);
    last_completion_us = std::max(last_completion_us, c.at_us);
  }
  for (int64_t i = 0; i < jobs; ++i) {
    if (!ids[static_cast<size_t>(i)].empty() && times_completed[static_cast<size_t>(i)] == 0) {
      ++missing;
    }
  }
  std::sort(latencies.begin(), latencies.end());

  // The server's own totals, as a second look.
  auto q = Call(*admin, "GET", "/v1/admin/queues/" + queue);
  json totals = q.status == 200 ? q.body["totals"] : json(nullptr);
  json stats = q.status == 200 ? q.body["stats"] : json(nullptr);
  const int64_t n_ok = static_cast<int64_t>(latencies.size()) - duplicates;
  bool server_agrees = totals.is_object() && totals.value("succeeded", int64_t{-1}) == n_ok &&
                       totals.value("admitted", int64_t{-1}) == accepted.load() &&
                       stats.value("queued", int64_t{-1}) == 0 &&
                       stats.value("leased", int64_t{-1}) == 0;

  const double submit_s = static_cast<double>(last_submit_us.load()) / 1e6;
  const double e2e_s = last_completion_us / 1e6;
  const double done_jobs = static_cast<double>(std::max<int64_t>(n_ok, 1));
  const double cpu_s = static_cast<double>(cpu1 - cpu0) / static_cast<double>(hz);
  const double pg_s = static_cast<double>(pg1 - pg0) / static_cast<double>(hz);
  int64_t non202 = 0, bad_completes = 0;
  for (auto& [k, n] : submit_errors) non202 += n;
  for (auto& [k, n] : complete_errors) bad_completes += n;
  const bool ok = non202 == 0 && bad_completes == 0 && duplicates == 0 && missing == 0 &&
                  unknown == 0 && lease_errors == 0 && !give_up.load() && server_agrees;

  json out = {{"driver", !own_server ? "external"
                         : on_pg     ? "postgres"
                                     : "sqlite"},
              {"servers", server_urls},
              {"jobs", jobs},
              {"tenants", tenants},
              {"submitters", submitters},
              {"submit_client", submit_client},
              {"workers", workers},
              {"max_jobs_per_lease", max_jobs},
              {"ack_mode", ack_mode},
              {"accepted", accepted.load()},
              {"submit_s", Round(submit_s, 3)},
              {"submit_jobs_per_s", Round(static_cast<double>(accepted.load()) / submit_s, 0)},
              {"completed", n_ok},
              {"e2e_s", Round(e2e_s, 3)},
              {"e2e_jobs_per_s", Round(static_cast<double>(n_ok) / e2e_s, 0)},
              {"latency_ms",
               {{"p50", Round(Pct(latencies, 0.5), 2)},
                {"p90", Round(Pct(latencies, 0.9), 2)},
                {"p99", Round(Pct(latencies, 0.99), 2)},
                {"max", Round(latencies.empty() ? 0 : latencies.back(), 2)}}},
              {"leases", leases},
              {"empty_leases", empty_leases},
              {"jobs_per_lease",
               Round(static_cast<double>(n_ok) /
                         std::max<double>(1.0, static_cast<double>(leases - empty_leases)),
                     2)},
              {"check",
               {{"ok", ok},
                {"non202_submits", non202},
                {"non202_statuses", submit_errors},
                {"failed_completes", bad_completes},
                {"failed_complete_answers", complete_errors},
                {"lease_errors", lease_errors},
                {"duplicates", duplicates},
                {"missing", missing},
                {"unknown", unknown},
                {"gave_up", give_up.load()},
                {"server_totals", totals},
                {"server_stats", stats},
                {"server_agrees", server_agrees}}}};
  if (!sluiced_pids.empty()) {
    out["sluiced_cpu_s"] = Round(cpu_s, 2);
    out["sluiced_cpu_us_per_job"] = Round(cpu_s * 1e6 / done_jobs, 0);
  }
  if (pg_pid > 0) {
    out["postgres_cpu_s"] = Round(pg_s, 2);
    out["postgres_cpu_us_per_job"] = Round(pg_s * 1e6 / done_jobs, 0);
  }
  std::printf("%s\n", out.dump().c_str());
  return ok ? 0 : 1;
}
