// The dispatcher under concurrency (also run under ThreadSanitizer by
// scripts/sanitize.sh): submitters and long-polling workers on several threads, the
// dispatcher's own Asio thread leasing for them, and every job handed out exactly once.
#include "server/dispatcher.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "shaper/clock.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

TEST_CASE("dispatcher: concurrent submits and long-polls hand every job out exactly once",
          "[dispatcher]") {
  testing::TempDir dir;
  SqliteStoreOptions options;
  options.path = dir.File("d.db");
  auto opened = SqliteStore::Open(options);
  REQUIRE(opened.ok());
  SqliteStore& store = *opened.value();
  SystemClock clock;
  QueuePolicy policy;
  policy.bucket.rate_milli = 1'000'000'000;  // a million per second: rate never holds back
  policy.bucket.capacity = 100'000;
  policy.bucket.burst = 1'000;
  REQUIRE(store.PutQueue("q", policy, clock.Now()).ok());

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  Dispatcher dispatcher(io, store, clock);
  std::thread asio_thread([&] { io.run(); });

  constexpr int kSubmitters = 2, kJobsEach = 150, kWorkers = 4;
  constexpr int kJobs = kSubmitters * kJobsEach;
  std::mutex mu;
  std::map<std::string, int> leased;  // job id -> times handed out (guarded by mu)
  std::atomic<int> total{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      LeaseRequest ask;
      ask.queues = {"q"};
      ask.max_jobs = 7;
      ask.worker_id = "w" + std::to_string(w);
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (total.load() < kJobs && std::chrono::steady_clock::now() < give_up) {
        auto jobs = dispatcher.Lease(ask, std::chrono::milliseconds(200));
        if (!jobs.ok()) continue;
        std::lock_guard lock(mu);
        for (const JobRecord& j : jobs.value()) ++leased[j.id];
        total += static_cast<int>(jobs.value().size());
      }
    });
  }
  for (int s = 0; s < kSubmitters; ++s) {
    threads.emplace_back([&, s] {
      for (int i = 0; i < kJobsEach; ++i) {
        NewJob job;
        job.queue = "q";
        job.tenant = "t" + std::to_string((s * kJobsEach + i) % 5);
        job.payload = "null";
        auto out = store.Submit(job, clock.Now());
        if (out.ok()) dispatcher.Notify();
      }
    });
  }
  for (auto& t : threads) t.join();
  dispatcher.Shutdown();
  work.reset();
  asio_thread.join();

  CHECK(total.load() == kJobs);
  CHECK(leased.size() == static_cast<size_t>(kJobs));
  for (const auto& [id, times] : leased) {
    INFO(id);
    CHECK(times == 1);
  }
}

}  // namespace
}  // namespace sluice
