// Dispatch (shaper/dispatch.h): which bucket releases next, why the others wait, and
// the fairness of DESIGN.md rule 5 on virtual time.
#include "shaper/dispatch.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "tests/shaper/virtual_bucket.h"

namespace sluice {
namespace {

using testing::Uniform;

constexpr Micros kNow = 1'800'000'000'000'000;

BucketView Bucket(ScheduleInstant tat, int64_t head_seq, int64_t rate_milli = 1000,
                  size_t queue = 0) {
  BucketView b;
  b.queue = queue;
  b.policy.rate_milli = rate_milli;
  b.tat = tat;
  b.head_seq = head_seq;
  return b;
}

TEST_CASE("ChooseRelease picks the earliest release time", "[dispatch]") {
  std::vector<QueueView> queues(1);
  std::vector<BucketView> buckets = {Bucket({kNow - 10, 0}, 1), Bucket({kNow - 30, 0}, 2),
                                     Bucket({kNow - 20, 0}, 3)};
  DispatchChoice c = ChooseRelease(queues, buckets, kNow);
  REQUIRE(c.release);
  CHECK(*c.release == 1);
  CHECK_FALSE(c.wake_at);

  // Release time, not TAT: burst tolerance makes bucket 0 (TAT later) release first.
  buckets[0].policy.burst = 2;  // releasable 1 s before its TAT
  c = ChooseRelease(queues, buckets, kNow);
  REQUIRE(c.release);
  CHECK(*c.release == 0);
}

TEST_CASE("ChooseRelease breaks ties by the older head job", "[dispatch]") {
  std::vector<QueueView> queues(1);
  std::vector<BucketView> buckets = {Bucket({kNow - 5, 0}, 42), Bucket({kNow - 5, 0}, 7),
                                     Bucket({kNow - 5, 0}, 19)};
  DispatchChoice c = ChooseRelease(queues, buckets, kNow);
  REQUIRE(c.release);
  CHECK(*c.release == 1);
  // A bucket releasing at exactly `now` ties with none earlier: still releasable.
  buckets = {Bucket({kNow, 0}, 3), Bucket({kNow + 1, 0}, 1)};
  c = ChooseRelease(queues, buckets, kNow);
  REQUIRE(c.release);
  CHECK(*c.release == 0);
}

TEST_CASE("Rate-blocked buckets give wake_at = the earliest release time", "[dispatch]") {
  std::vector<QueueView> queues(1);
  // 3/s: TAT kNow + 500000 1/3 µs releases at kNow + 500001.
  std::vector<BucketView> buckets = {Bucket({kNow + 900'000, 0}, 1),
                                     Bucket({kNow + 500'000, 1000}, 2, 3000),
                                     Bucket({kNow + 700'000, 0}, 3)};
  DispatchChoice c = ChooseRelease(queues, buckets, kNow);
  CHECK_FALSE(c.release);
  REQUIRE(c.wake_at);
  CHECK(*c.wake_at == kNow + 500'001);
  // Nothing at all: no release, no wake-up.
  c = ChooseRelease(queues, {}, kNow);
  CHECK_FALSE(c.release);
  CHECK_FALSE(c.wake_at);
}

TEST_CASE("Paused and capped buckets are never chosen and give no wake_at", "[dispatch]") {
  // Queue 0 paused, queue 1 at max_inflight, queue 2 open.
  std::vector<QueueView> queues(3);
  queues[0].paused = true;
  queues[1].max_inflight = 2;
  queues[1].leased = 2;
  BucketView paused = Bucket({kNow - 100, 0}, 1, 1000, 0);
  BucketView queue_capped = Bucket({kNow - 100, 0}, 2, 1000, 1);
  BucketView tenant_capped = Bucket({kNow - 100, 0}, 3, 1000, 2);
  tenant_capped.policy.max_inflight_per_tenant = 1;
  tenant_capped.leased = 1;

  SECTION("releasable by rate, blocked by caps: nothing, and no timer") {
    DispatchChoice c = ChooseRelease(queues, {paused, queue_capped, tenant_capped}, kNow);
    CHECK_FALSE(c.release);
    CHECK_FALSE(c.wake_at);
  }
  SECTION("also rate-blocked later: caps still give no timer") {
    for (BucketView* b : {&paused, &queue_capped, &tenant_capped}) b->tat = {kNow + 5000, 0};
    DispatchChoice c = ChooseRelease(queues, {paused, queue_capped, tenant_capped}, kNow);
    CHECK_FALSE(c.release);
    CHECK_FALSE(c.wake_at);
  }
  SECTION("an open bucket releasing later than the blocked ones is chosen") {
    BucketView open = Bucket({kNow - 1, 0}, 99, 1000, 2);
    DispatchChoice c = ChooseRelease(queues, {paused, queue_capped, tenant_capped, open}, kNow);
    REQUIRE(c.release);
    CHECK(*c.release == 3);
  }
  SECTION("a tenant cap of 0 means no cap; a queue below max_inflight releases") {
    tenant_capped.policy.max_inflight_per_tenant = 0;
    tenant_capped.leased = 1000;
    queues[1].leased = 1;
    DispatchChoice c = ChooseRelease(queues, {queue_capped, tenant_capped}, kNow);
    REQUIRE(c.release);
    CHECK(*c.release == 0);  // older release time? equal; head_seq 2 < 3
  }
}

TEST_CASE("BucketBlockedBy reports the first of paused, queue_cap, tenant_cap, rate",
          "[dispatch]") {
  // Every combination of the four conditions: the answer is the first that holds.
  for (int mask = 0; mask < 16; ++mask) {
    bool paused = mask & 1, queue_cap = mask & 2, tenant_cap = mask & 4, rate = mask & 8;
    QueueView q;
    q.paused = paused;
    q.max_inflight = 3;
    q.leased = queue_cap ? 3 : 2;
    BucketView b = Bucket(rate ? ScheduleInstant{kNow + 1, 0} : ScheduleInstant{kNow, 0}, 1);
    b.policy.max_inflight_per_tenant = 2;
    b.leased = tenant_cap ? 2 : 1;
    BlockedBy expected = paused       ? BlockedBy::kPaused
                         : queue_cap  ? BlockedBy::kQueueCap
                         : tenant_cap ? BlockedBy::kTenantCap
                         : rate       ? BlockedBy::kRate
                                      : BlockedBy::kNone;
    CAPTURE(paused, queue_cap, tenant_cap, rate);
    CHECK(BucketBlockedBy(q, b, kNow) == expected);
  }
}

// One worker takes one job at a time: it asks ChooseRelease, takes the job, and is busy
// for `service` µs (0: always ready, so the rate is the bottleneck). When nothing is
// releasable it waits for wake_at. Buckets are always backlogged; job seqs model
// admission order (bucket j's jobs were admitted in one block after bucket j-1's).
struct FairnessRun {
  std::vector<int64_t> counts;
  int64_t worst_spread = 0;  // max over every prefix of (max count - min count)
};

FairnessRun RunBacklogged(std::vector<BucketView> buckets, Micros service, int dispatches) {
  std::vector<QueueView> queues(1);
  FairnessRun run;
  run.counts.assign(buckets.size(), 0);
  Micros now = kNow;
  for (int d = 0; d < dispatches; ++d) {
    DispatchChoice c = ChooseRelease(queues, buckets, now);
    if (!c.release) {
      REQUIRE(c.wake_at);
      REQUIRE(*c.wake_at > now);
      now = *c.wake_at;
      c = ChooseRelease(queues, buckets, now);
      REQUIRE(c.release);
    }
    BucketView& b = buckets[*c.release];
    b.tat = AfterRelease(b.policy, b.tat, b.head_cost, now);
    b.head_seq += 1;
    run.counts[*c.release] += 1;
    auto [lo, hi] = std::minmax_element(run.counts.begin(), run.counts.end());
    run.worst_spread = std::max(run.worst_spread, *hi - *lo);
    now += service;
  }
  return run;
}

TEST_CASE("Property: k equally configured backlogged buckets get counts within 1",
          "[dispatch][property]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  for (uint64_t c = 0; c < 400; ++c) {
    std::mt19937_64 rng(seed * 31 + c);
    size_t k = Uniform<size_t>(rng, 2, 8);
    BucketPolicy policy;
    policy.rate_milli = Uniform<int64_t>(rng, 500, 200'000);
    policy.burst = Uniform<int64_t>(rng, 1, 5);
    Micros interval = CostDuration(1, policy.rate_milli).us;
    // Worker-bound (slower than k buckets' joint rate) or rate-bound.
    Micros service = Uniform<int>(rng, 0, 1)
                         ? Uniform<Micros>(rng, interval / static_cast<Micros>(k) + 1, 3 * interval)
                         : Uniform<Micros>(rng, 0, interval / (4 * static_cast<Micros>(k)));
    std::vector<BucketView> buckets;
    for (size_t j = 0; j < k; ++j) {
      BucketView b = Bucket({kNow - Uniform<Micros>(rng, 0, 100'000'000), 0},
                            static_cast<int64_t>(j) * 1'000'000);
      b.policy = policy;
      buckets.push_back(b);
    }
    CAPTURE(c, k, policy.rate_milli, policy.burst, service);
    FairnessRun run = RunBacklogged(buckets, service, 60 * static_cast<int>(k));
    CAPTURE(run.counts);
    REQUIRE(run.worst_spread <= 1);
  }
}

TEST_CASE("A 100000-job backlog does not delay a newly backlogged bucket", "[dispatch]") {
  const uint64_t seed = testing::PropertySeed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (Micros service : {Micros{0}, Micros{250'000}, Micros{2'000'000}}) {
    // Bucket 0: 100000 jobs (seq 0..99999) at 1/s, released back to back by a worker
    // that needs `service` µs per job. Bucket 1 (seq 100000, admitted after all of
    // them) becomes backlogged at a random instant while bucket 0 still has work.
    std::vector<QueueView> queues(1);
    BucketView big = Bucket({kNow, 0}, 0);
    BucketView fresh = Bucket({kNow - 3'600'000'000, 0}, 100'000);  // idle for an hour
    Micros interval = CostDuration(1, big.policy.rate_milli).us;
    Micros arrival = kNow + Uniform<Micros>(rng, 0, 50'000 * interval);
    CAPTURE(service, arrival - kNow);
    Micros now = kNow;
    Micros worker_free = kNow;
    std::optional<Micros> fresh_first_release;
    while (!fresh_first_release) {
      now = std::max(now, worker_free);
      std::vector<BucketView> backlogged = {big};
      if (now >= arrival) backlogged.push_back(fresh);
      DispatchChoice c = ChooseRelease(queues, backlogged, now);
      Micros next = c.release ? now : *c.wake_at;
      if (now < arrival && next >= arrival) {  // the submit of bucket 1 wakes the worker
        now = std::max(arrival, worker_free);
        continue;
      }
      if (!c.release) {
        now = next;
        continue;
      }
      if (*c.release == 1) {
        fresh_first_release = now;
        break;
      }
      REQUIRE(big.head_seq < 100'000);
      big.tat = AfterRelease(big.policy, big.tat, 1, now);
      big.head_seq += 1;
      worker_free = now + service;
    }
    // It waits at most for the worker to finish the job in hand, and never for bucket
    // 0's schedule: within one emission interval (or one service time when slower).
    CHECK(*fresh_first_release - arrival <= std::max(interval, service));
    CHECK(*fresh_first_release - arrival <= service);
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

TEST_CASE("A head that can only start at or after its deadline is never chosen", "[dispatch]") {
  std::vector<QueueView> queues(1);
  std::vector<BucketView> buckets = {Bucket({kNow + 500, 0}, 1)};
  buckets[0].head_deadline = kNow + 500;  // release time == deadline: too late
  DispatchChoice c = ChooseRelease(queues, buckets, kNow, kNow + 1000);
  CHECK_FALSE(c.release);
  CHECK_FALSE(c.wake_at);  // nothing to wake for: it will expire
  buckets[0].head_deadline = kNow + 501;
  c = ChooseRelease(queues, buckets, kNow, kNow + 1000);
  REQUIRE(c.release);
  CHECK(ReleaseTime(buckets[0], kNow) == kNow + 500);
}

TEST_CASE("A horizon makes heads due by then releasable, in schedule order", "[dispatch]") {
  std::vector<QueueView> queues(1);
  std::vector<BucketView> buckets = {Bucket({kNow + 800, 0}, 1), Bucket({kNow + 300, 0}, 2),
                                     Bucket({kNow + 5000, 0}, 3)};
  DispatchChoice c = ChooseRelease(queues, buckets, kNow, kNow + 1000);
  REQUIRE(c.release);
  CHECK(*c.release == 1);
  c = ChooseRelease(queues, buckets, kNow);  // no horizon: nothing is due yet
  CHECK_FALSE(c.release);
  REQUIRE(c.wake_at);
  CHECK(*c.wake_at == kNow + 300);
}

}  // namespace
}  // namespace sluice
