// Property 3 of issue 3 on virtual time: nothing is released while the tenant cap or
// the queue cap is full, and releases resume as soon as a lease ends.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "shaper/dispatch.h"

namespace sluice {
namespace {

constexpr Micros kStart = 1'800'000'000'000'000;

TEST_CASE("Property: caps hold releases until a lease ends, then releases resume",
          "[dispatch][property]") {
  const uint64_t seed = GENERATE(take(200, random(uint64_t{1}, uint64_t{1} << 40)));
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };

  const size_t tenants = static_cast<size_t>(pick(1, 6));
  std::vector<QueueView> queues(1);
  queues[0].max_inflight = pick(0, 1) ? pick(1, 8) : 0;
  std::vector<BucketView> buckets(tenants);
  std::vector<int64_t> backlog(tenants);
  std::vector<std::vector<Micros>> lease_ends(tenants);  // running leases per bucket
  for (size_t i = 0; i < tenants; ++i) {
    buckets[i].policy.rate_milli = pick(1000, 50'000);
    buckets[i].policy.burst = pick(1, 3);
    buckets[i].policy.max_inflight_per_tenant = pick(0, 1) ? pick(1, 3) : 0;
    buckets[i].tat = ScheduleInstant{kStart, 0};
    buckets[i].head_seq = static_cast<int64_t>(i);
    backlog[i] = pick(5, 60);
  }

  Micros now = kStart;
  int releases = 0;
  for (int step = 0; step < 400; ++step) {
    // End the leases whose time has come.
    for (size_t i = 0; i < tenants; ++i) {
      auto& ends = lease_ends[i];
      for (auto it = ends.begin(); it != ends.end();) {
        if (*it <= now) {
          it = ends.erase(it);
          buckets[i].leased -= 1;
          queues[0].leased -= 1;
        } else {
          ++it;
        }
      }
    }
    std::vector<BucketView> ready;
    std::vector<size_t> index;
    for (size_t i = 0; i < tenants; ++i) {
      if (backlog[i] > 0) {
        ready.push_back(buckets[i]);
        index.push_back(i);
      }
    }
    if (ready.empty()) break;
    DispatchChoice c = ChooseRelease(queues, ready, now);
    if (c.release) {
      size_t i = index[*c.release];
      // The invariant: a released bucket is under both caps.
      REQUIRE((queues[0].max_inflight == 0 || queues[0].leased < queues[0].max_inflight));
      REQUIRE((buckets[i].policy.max_inflight_per_tenant == 0 ||
               buckets[i].leased < buckets[i].policy.max_inflight_per_tenant));
      REQUIRE(ReleaseAt(buckets[i].policy, buckets[i].tat) <= now);
      buckets[i].tat = AfterRelease(buckets[i].policy, buckets[i].tat, 1, now);
      buckets[i].leased += 1;
      buckets[i].head_seq += static_cast<int64_t>(tenants);
      queues[0].leased += 1;
      backlog[i] -= 1;
      lease_ends[i].push_back(now + pick(1, 2'000'000));
      ++releases;
      continue;  // same instant: maybe more are releasable
    }
    // Nothing releasable now: the next event is a rate wake-up or a lease ending.
    Micros next = c.wake_at.value_or(INT64_MAX);
    bool any_lease = false;
    for (const auto& ends : lease_ends) {
      for (Micros e : ends) {
        next = std::min(next, e);
        any_lease = true;
      }
    }
    // Liveness: with work queued, something must let it out eventually — a timer
    // (rate) or a lease ending (caps). Never stuck with neither.
    REQUIRE((c.wake_at.has_value() || any_lease));
    REQUIRE(next > now);
    now = next;
  }
  CHECK(releases > 0);
}

}  // namespace
}  // namespace sluice
