// Intake-limiter state in the store (Store::DecideLimitAsync): decisions follow the
// limiter (shaper/limiters), persist, are atomic on one key under concurrent callers
// (on PostgreSQL: over the driver's pool of connections, as several instances would
// be), and expired keys are cleaned. Part of the conformance suite ([store]).
#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

LimitOutcome DecideNow(Store& store, const std::string& key, const Limit& limit, Micros now,
                       int64_t cost = 1) {
  std::promise<Result<LimitOutcome>> p;
  auto f = p.get_future();
  store.DecideLimitAsync(key, limit, cost, now,
                         [&p](Result<LimitOutcome> r) { p.set_value(std::move(r)); });
  Result<LimitOutcome> r = f.get();
  INFO((r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  return r.value();
}

TEST_CASE("limits: a fixed window in the store admits its limit, then says when",
          "[store][limits]") {
  StoreFixture f;
  const Limit limit{Algorithm::kFixedWindow, 3, 60 * kSecond, 1};
  const Micros start = f.now() - f.now() % (60 * kSecond);
  f.clock().Set(start + 10 * kSecond);
  for (int i = 0; i < 3; ++i) {
    const LimitOutcome o = DecideNow(f.store(), "rl:v1:t:a", limit, f.now());
    REQUIRE(o.decision.allowed);
    REQUIRE(o.decision.remaining == 2 - i);
    REQUIRE(o.next_unit_after == (i < 2 ? 0 : 50 * kSecond));
  }
  const LimitOutcome denied = DecideNow(f.store(), "rl:v1:t:a", limit, f.now());
  REQUIRE_FALSE(denied.decision.allowed);
  REQUIRE(denied.decision.retry_after == 50 * kSecond);
  // Another key is another quota.
  REQUIRE(DecideNow(f.store(), "rl:v1:t:b", limit, f.now()).decision.allowed);
  // The state outlives the process.
  f.Open();
  REQUIRE_FALSE(DecideNow(f.store(), "rl:v1:t:a", limit, f.now()).decision.allowed);
  f.clock().Set(start + 60 * kSecond);
  REQUIRE(DecideNow(f.store(), "rl:v1:t:a", limit, f.now()).decision.allowed);
}

TEST_CASE("limits: concurrent decisions on one key never over-admit", "[store][limits]") {
  StoreFixture f;
  const Limit limit{Algorithm::kFixedWindow, 40, 3600 * kSecond, 1};
  const Micros now = f.now();
  std::atomic<int> allowed{0}, denied{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        std::promise<Result<LimitOutcome>> p;
        auto fut = p.get_future();
        f.store().DecideLimitAsync("rl:v1:race", limit, 1, now,
                                   [&p](Result<LimitOutcome> r) { p.set_value(std::move(r)); });
        Result<LimitOutcome> r = fut.get();
        if (r.ok() && r.value().decision.allowed)
          ++allowed;
        else if (r.ok())
          ++denied;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(allowed == 40);
  CHECK(denied == 40);
}

TEST_CASE("limits: keys whose quota is whole again are cleaned", "[store][limits]") {
  StoreFixture f;
  const Limit limit{Algorithm::kGcra, 1, 10 * kSecond, 1};
  REQUIRE(DecideNow(f.store(), "rl:v1:clean", limit, f.now()).decision.allowed);
  REQUIRE_FALSE(DecideNow(f.store(), "rl:v1:clean", limit, f.now()).decision.allowed);
  auto kept = f.store().CleanLimits(f.now() + 10 * kSecond - 1, 100);
  REQUIRE(kept.ok());
  CHECK(kept.value() == 0);
  f.clock().Advance(10 * kSecond);
  auto cleaned = f.store().CleanLimits(f.now(), 100);
  REQUIRE(cleaned.ok());
  CHECK(cleaned.value() == 1);
  REQUIRE(DecideNow(f.store(), "rl:v1:clean", limit, f.now()).decision.allowed);
}

}  // namespace
}  // namespace sluice::testing
