// Policy dry-run (shaper/simulate.h): drain times and deadline misses on virtual time.
#include "shaper/simulate.h"

#include <catch2/catch.hpp>
#include <random>

#include "shaper/admission.h"

namespace sluice {
namespace {

QueuePolicy Rate(double rate, int64_t capacity = 1000) {
  QueuePolicy q;
  q.bucket.rate_milli = static_cast<int64_t>(rate * 1000);
  q.bucket.capacity = capacity;
  q.bucket.burst = 1;
  return q;
}

TEST_CASE("an idle bucket drains its backlog at the rate, FIFO", "[simulate]") {
  const Micros now = 1'000'000'000;
  TenantBacklog b{"acme", {}, {{1, {}}, {1, {}}, {1, now + 150'000}, {1, {}}, {1, {}}}};
  auto d = ProjectDrain(Rate(10), {b}, now);
  REQUIRE(d.size() == 1);
  CHECK(d[0].jobs == 5);
  CHECK(d[0].cost == 5);
  CHECK(d[0].last_release == now + 400'000);
  CHECK(d[0].missed_deadlines == 1);  // the third leaves at +200 ms, after its deadline
  // Twice the rate: half the time, and the deadline is met.
  auto fast = ProjectDrain(Rate(20), {b}, now);
  CHECK(fast[0].last_release == now + 200'000);
  CHECK(fast[0].missed_deadlines == 0);
}

TEST_CASE("tenant overrides and empty backlogs", "[simulate]") {
  const Micros now = 5'000'000;
  QueuePolicy q = Rate(1);
  TenantOverride gold;
  gold.rate_milli = 4000;
  q.tenants["gold"] = gold;
  std::vector<TenantBacklog> backlog = {{"gold", {}, {{1, {}}, {1, {}}, {1, {}}, {1, {}}, {1, {}}}},
                                        {"free", {}, {{1, {}}, {1, {}}, {1, {}}, {1, {}}, {1, {}}}},
                                        {"idle", {}, {}}};
  auto d = ProjectDrain(q, backlog, now);
  REQUIRE(d.size() == 3);
  CHECK(d[0].last_release == now + 1'000'000);  // 4/s: 4 intervals of 250 ms
  CHECK(d[1].last_release == now + 4'000'000);  // 1/s
  CHECK(d[2].jobs == 0);
  CHECK(d[2].last_release == now);
}

TEST_CASE("the projection agrees with admission's estimated starts", "[simulate][property]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    QueuePolicy q = Rate(1 + static_cast<double>(rng() % 500) / 7.0, 1'000'000);
    const BucketPolicy p = q.ForTenant("t");
    const Micros now = 1'000'000'000 + static_cast<Micros>(rng() % 1'000'000);
    // Admit a backlog at `now`; each admitted job gets its estimated start.
    BucketState bucket;
    TenantBacklog backlog{"t", {}, {}};
    Micros last_estimate = now;
    const int n = 1 + static_cast<int>(rng() % 50);
    for (int i = 0; i < n; ++i) {
      AdmissionRequest req;
      req.cost = 1 + static_cast<int64_t>(rng() % 3);
      AdmissionDecision d = Admit(p, bucket, req, now);
      REQUIRE(d.outcome == AdmissionOutcome::kAdmitted);
      bucket.queued_count += 1;
      bucket.queued_cost += req.cost;
      backlog.jobs.push_back({req.cost, {}});
      last_estimate = d.estimated_start;
    }
    auto d = ProjectDrain(q, {backlog}, now);
    CHECK(d[0].last_release == last_estimate);
  }
}

}  // namespace
}  // namespace sluice
