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

LimitsOutcome DecideAll(Store& store, std::vector<LimitAsk> asks, Micros now) {
  std::promise<Result<LimitsOutcome>> p;
  auto f = p.get_future();
  store.DecideLimitsAsync(std::move(asks), now,
                          [&p](Result<LimitsOutcome> r) { p.set_value(std::move(r)); });
  Result<LimitsOutcome> r = f.get();
  INFO((r.ok() ? std::string() : r.error().detail));
  REQUIRE(r.ok());
  return r.value();
}

void ReleaseAll(Store& store, std::vector<LimitAsk> asks, Micros now) {
  std::promise<Result<Ok>> p;
  auto f = p.get_future();
  store.ReleaseLimitsAsync(std::move(asks), now, [&p](Result<Ok> r) { p.set_value(std::move(r)); });
  REQUIRE(f.get().ok());
}

TEST_CASE("limits: several layers decide all or nothing", "[store][limits]") {
  StoreFixture f;
  const LimitAsk wide{"rl:v1:wide:ip=a", Limit{Algorithm::kFixedWindow, 10, 3600 * kSecond, 1}, 1};
  const LimitAsk narrow{"rl:v1:narrow:ip=a", Limit{Algorithm::kFixedWindow, 2, 3600 * kSecond, 1},
                        1};
  for (int i = 0; i < 2; ++i) {
    const LimitsOutcome o = DecideAll(f.store(), {wide, narrow}, f.now());
    REQUIRE(o.allowed);
    REQUIRE(o.outcomes.size() == 2);
    CHECK(o.outcomes[0].decision.remaining == 9 - i);
    CHECK(o.outcomes[1].decision.remaining == 1 - i);
  }
  // The narrow layer refuses: the wide one's count is not spent either.
  const LimitsOutcome refused = DecideAll(f.store(), {wide, narrow}, f.now());
  REQUIRE_FALSE(refused.allowed);
  REQUIRE(refused.outcomes.size() == 2);
  CHECK_FALSE(refused.outcomes[1].decision.allowed);
  const LimitsOutcome wide_only = DecideAll(f.store(), {wide}, f.now());
  REQUIRE(wide_only.allowed);
  CHECK(wide_only.outcomes[0].decision.remaining == 7);  // 2 admitted before, then this one
}

TEST_CASE("limits: requests decided together keep all or nothing per request", "[store][limits]") {
  StoreFixture f;
  const Limit wide{Algorithm::kFixedWindow, 1000, 3600 * kSecond, 1};
  const Limit narrow{Algorithm::kFixedWindow, 1, 3600 * kSecond, 1};
  constexpr int kRequests = 200;
  std::vector<std::promise<Result<LimitsOutcome>>> answers(kRequests);
  for (int i = 0; i < kRequests; ++i) {  // all in flight at once: batched by the store
    f.store().DecideLimitsAsync(
        {LimitAsk{"rl:v1:wide:t", wide, 1},
         LimitAsk{"rl:v1:narrow:n" + std::to_string(i % 100), narrow, 1}},
        f.now(), [&answers, i](Result<LimitsOutcome> r) { answers[i].set_value(std::move(r)); });
  }
  int admitted = 0;
  for (auto& a : answers) {
    Result<LimitsOutcome> r = a.get_future().get();
    REQUIRE(r.ok());
    if (r.value().allowed) ++admitted;
  }
  CHECK(admitted == 100);  // one per narrow key
  // The wide layer spent exactly what was admitted: refused requests spent nothing.
  const LimitsOutcome after = DecideAll(f.store(), {LimitAsk{"rl:v1:wide:t", wide, 1}}, f.now());
  REQUIRE(after.allowed);
  CHECK(after.outcomes[0].decision.remaining == 1000 - 100 - 1);
}

TEST_CASE("limits: a concurrency slot is held until released, and a dead holder's lapses",
          "[store][limits]") {
  StoreFixture f;
  const LimitAsk slot{"rl:v1:c:token=t", Limit{Algorithm::kConcurrency, 2, kSecond, 1}, 1};
  REQUIRE(DecideAll(f.store(), {slot}, f.now()).allowed);
  REQUIRE(DecideAll(f.store(), {slot}, f.now()).allowed);
  const LimitsOutcome full = DecideAll(f.store(), {slot}, f.now());
  REQUIRE_FALSE(full.allowed);
  CHECK_FALSE(full.outcomes[0].decision.retry_after.has_value());
  ReleaseAll(f.store(), {slot}, f.now());
  REQUIRE(DecideAll(f.store(), {slot}, f.now()).allowed);
  REQUIRE_FALSE(DecideAll(f.store(), {slot}, f.now()).allowed);
  // Holders that never release (an instance that died): after the hold, the key starts
  // afresh.
  f.clock().Advance(6 * 60 * kSecond);
  REQUIRE(DecideAll(f.store(), {slot}, f.now()).allowed);
  auto stats = f.store().GetLimitStats(f.now());
  REQUIRE(stats.ok());
  CHECK(stats.value().keys == 1);
  CHECK(stats.value().log_bytes == 0);
}

TEST_CASE("limits: declared layers are stored with a version", "[store][limits]") {
  StoreFixture f;
  auto none = f.store().GetLimitLayers();
  REQUIRE(none.ok());
  CHECK_FALSE(none.value().has_value());
  auto v1 = f.store().PutLimitLayers(R"({"layers":[]})", f.now());
  REQUIRE(v1.ok());
  CHECK(v1.value() == 1);
  auto v2 = f.store().PutLimitLayers(R"({"layers":[1]})", f.now());
  REQUIRE(v2.ok());
  CHECK(v2.value() == 2);
  f.Open();
  auto stored = f.store().GetLimitLayers();
  REQUIRE(stored.ok());
  REQUIRE(stored.value().has_value());
  CHECK(stored.value()->version == 2);
  CHECK(stored.value()->body == R"({"layers":[1]})");
}

}  // namespace
}  // namespace sluice::testing
