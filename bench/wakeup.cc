// Cross-instance wake-up latency: how soon a worker long-polling on one sluiced gets a
// job submitted through another sluiced on the same PostgreSQL database.
//
// Starts a private PostgreSQL server (tests/testutil/pg_server.h) and two real sluiced
// on one database of it, both with --recheck-ms 0 (so that only the LISTEN/NOTIFY
// message between them can wake a parked long-poll; a long-poll that is not woken waits
// out its 20 s). Each trial parks one long-poll (max_jobs 1) on instance B, waits until
// B reports it parked, then submits one job through instance A and measures from just
// before the submit is sent to the lease answer with that job: the submit's commit, the
// notification, B's lease transaction and the answer. The same trials with the
// long-poll on A (the instance that took the submit) give the floor of those steps
// without the notification.
//
// Usage: sluice-bench-wakeup [--trials 300]
// Prints both distributions (p50, p90, p99, max in ms) and any trial that was not woken.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "tests/testutil/pg_server.h"
#include "tests/testutil/server_process.h"

using nlohmann::json;
using sluice::testing::Bearer;
using sluice::testing::Call;
using sluice::testing::PgServer;
using sluice::testing::ServerOptions;
using sluice::testing::ServerProcess;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr int kWaitMs = 20000;

size_t Waiting(ServerProcess& s, httplib::Client& c) {
  auto r = Call(c, "GET", "/v1/admin/queues", nullptr, Bearer(s.admin_token()));
  return r.status == 200 ? r.body.value("waiting_leases", size_t{0}) : 0;
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One distribution: parks on `parked`, submits through `submitter`.
std::vector<double> Trials(int n, ServerProcess& submitter, ServerProcess& parked,
                           const std::string& submit_token, const std::string& work_token,
                           int* not_woken) {
  auto submit = submitter.Client();
  auto admin = parked.Client();
  auto worker = parked.Client();
  worker->set_read_timeout(60, 0);
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto answer = std::async(std::launch::async, [&] {
      return Call(*worker, "POST", "/v1/leases",
                  {{"queues", {"q"}}, {"max_jobs", 1}, {"wait_ms", kWaitMs}}, Bearer(work_token));
    });
    while (Waiting(parked, *admin) == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    const auto t0 = SteadyClock::now();
    auto r = Call(*submit, "POST", "/v1/queues/q/jobs", {{"payload", i}}, Bearer(submit_token));
    if (r.status != 202) {
      std::fprintf(stderr, "submit answered %d\n", r.status);
      std::exit(1);
    }
    auto got = answer.get();
    const double elapsed =
        std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
    if (got.status != 200 || got.body["jobs"].size() != 1 ||
        got.body["jobs"][0]["id"] != r.body["id"]) {
      ++*not_woken;
      continue;
    }
    ms.push_back(elapsed);
    auto done = Call(*worker, "POST",
                     "/v1/jobs/" + got.body["jobs"][0]["id"].get<std::string>() + "/complete",
                     {{"lease_id", got.body["jobs"][0]["lease_id"]}}, Bearer(work_token));
    if (done.status != 200) {
      std::fprintf(stderr, "complete answered %d\n", done.status);
      std::exit(1);
    }
  }
  return ms;
}

void Print(const char* what, const std::vector<double>& ms, int not_woken) {
  std::printf("%-34s n=%zu  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f ms  not woken: %d\n", what,
              ms.size(), Pct(ms, 0.5), Pct(ms, 0.9), Pct(ms, 0.99), Pct(ms, 1.0), not_woken);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cross-instance wake-up latency on PostgreSQL"};
  int trials = 300;
  app.add_option("--trials", trials, "trials per distribution");
  CLI11_PARSE(app, argc, argv);

  PgServer pg;
  ServerOptions o;
  o.db_path = pg.CreateDatabase();
  o.extra_args = {"--db-pool", "4", "--recheck-ms", "0", "--no-access-log"};
  ServerProcess a(o), b(o);
  auto admin = a.Client();
  if (Call(*admin, "PUT", "/v1/admin/queues/q", {{"rate", 100000}, {"capacity", 100000}},
           Bearer(a.admin_token()))
          .status != 200) {
    std::fprintf(stderr, "cannot create the queue\n");
    return 1;
  }
  const std::string submit =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"submit"}}, {"tenant", "acme"}},
           Bearer(a.admin_token()))
          .body["token"];
  const std::string work =
      Call(*admin, "POST", "/v1/admin/tokens", {{"scopes", {"work"}}}, Bearer(a.admin_token()))
          .body["token"];

  int cross_missed = 0, same_missed = 0;
  // Alternating halves, so that both distributions see the same moments of the machine.
  std::vector<double> cross, same;
  for (int half = 0; half < 2; ++half) {
    auto c = Trials(trials / 2, a, b, submit, work, &cross_missed);
    auto s = Trials(trials / 2, a, a, submit, work, &same_missed);
    cross.insert(cross.end(), c.begin(), c.end());
    same.insert(same.end(), s.begin(), s.end());
  }
  Print("submit on A, long-poll on B", cross, cross_missed);
  Print("submit on A, long-poll on A", same, same_missed);
  return cross_missed + same_missed > 0 ? 1 : 0;
}
