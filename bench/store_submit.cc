// Durable submits per second through the Store interface, SQLite against PostgreSQL, on
// this machine's disk: (a) one thread submitting in a loop (each submit waits for its
// commit), (b) several threads at once (SQLite's group commit; PostgreSQL's pool and the
// server's own grouping of WAL flushes). PostgreSQL is a private server (PgServer: fsync
// and synchronous_commit on) unless SLUICE_TEST_PG_URI names one. Prints JSON.
// Args: [submits per run, default 2000] [threads for (b), default 16].
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/pg_store.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/pg_server.h"
#include "tests/testutil/temp_dir.h"

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

sluice::NewJob Job(int i) {
  sluice::NewJob j;
  j.queue = "bench";
  j.tenant = "tenant" + std::to_string(i % 8);
  j.payload = R"({"n":1})";
  return j;
}

// Submits/s of `total` submits spread over `threads` threads.
double Run(sluice::Store& store, int total, int threads) {
  std::atomic<int> failed{0};
  const auto start = SteadyClock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < total; i += threads) {
        auto r = store.Submit(Job(i), 1'800'000'000'000'000);
        if (!r.ok() || r.value().decision.outcome != sluice::AdmissionOutcome::kAdmitted) {
          ++failed;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(SteadyClock::now() - start).count();
  if (failed > 0) std::fprintf(stderr, "%d submits failed\n", failed.load());
  return total / s;
}

json Measure(sluice::Store& store, int total, int threads) {
  sluice::QueuePolicy p;
  p.bucket.capacity = 1'000'000'000;
  if (!store.PutQueue("bench", p, 1).ok()) {
    std::fprintf(stderr, "PutQueue failed\n");
    std::exit(1);
  }
  Run(store, total / 10, 1);  // warm up: connections, caches, plans
  return {{"one_thread_per_s", std::round(Run(store, total, 1))},
          {std::to_string(threads) + "_threads_per_s", std::round(Run(store, total, threads))}};
}

}  // namespace

int main(int argc, char** argv) {
  const int total = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 16;
  json out;
  {
    sluice::testing::TempDir dir;
    sluice::SqliteStoreOptions options;
    options.path = dir.File("bench.db");
    auto store = sluice::SqliteStore::Open(options);
    if (!store.ok()) return 1;
    out["sqlite"] = Measure(*store.value(), total, threads);
  }
  {
    sluice::PgStoreOptions options;
    options.uri = sluice::testing::PgServer::Shared().CreateDatabase();
    options.pool = 8;
    auto store = sluice::PgStore::Open(options);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.error().detail.c_str());
      return 1;
    }
    out["postgres_pool_8"] = Measure(*store.value(), total, threads);
  }
  std::printf("%s\n", out.dump(2).c_str());
}
