// The release index (store/engine/release.cc) with more buckets than one page of it
// (64): every lease releases from a bucket due first among all buckets with queued jobs
// (checked against every bucket's next_release_at, read before the lease), and what
// can move a bucket's release earlier than its entry says (a lease ending at the tenant
// cap, a job becoming available, a cancel, a new policy) is seen by the next lease.
// Runs on every driver (the [store] conformance suite).
#include <catch2/catch.hpp>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using testing::MakePolicy;
using testing::StoreFixture;

constexpr Micros kMs = kMicrosPerMilli;

std::string Tenant(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "t%03d", i);
  return buf;
}

// Buckets with queued jobs and their next release time, as the admin view has them.
std::map<std::string, Micros> DueTimes(StoreFixture& f, const std::string& queue) {
  auto r = f.store().ListBuckets(queue);
  REQUIRE(r.ok());
  std::map<std::string, Micros> out;
  for (const BucketInfo& b : r.value()) {
    if (b.queued > 0 && b.next_release_at) out[b.tenant] = *b.next_release_at;
  }
  return out;
}

TEST_CASE("Among hundreds of buckets every lease releases from one due first", "[store]") {
  StoreFixture f;
  // 10 per second per tenant, burst 1: a tenant's jobs are 100 ms apart.
  f.PutQueue("q", MakePolicy(10'000));
  constexpr int kTenants = 150;
  // Tenants arrive over 150 ms, 3 jobs each, so their schedules differ; the last by name
  // first, so that the buckets due first are not the first by name (the index's order
  // among entries to be checked again).
  for (int i = kTenants - 1; i >= 0; --i) {
    for (int k = 0; k < 3; ++k) f.Admit("q", Tenant(i));
    f.clock().Advance(kMs);
  }
  int leased = 0, canceled = 0;
  bool policy_changed = false;
  for (int step = 0; leased + canceled < 3 * kTenants && step < 20000; ++step) {
    const std::map<std::string, Micros> due = DueTimes(f, "q");
    Micros earliest = std::numeric_limits<Micros>::max();
    for (const auto& [tenant, at] : due) earliest = std::min(earliest, at);
    LeaseOutcome out = f.Lease({"q"}, 1);
    if (out.jobs.empty()) {
      // Nothing due yet: the wake-up is the earliest release, exactly.
      INFO("step " << step << ", now " << f.now());
      REQUIRE(earliest > f.now());
      REQUIRE(out.wake_at);
      CHECK(*out.wake_at == earliest);
      f.clock().Set(earliest);
      continue;
    }
    REQUIRE(out.jobs.size() == 1);
    const JobRecord& j = out.jobs[0];
    INFO("step " << step << ": leased from " << j.tenant);
    REQUIRE(due.count(j.tenant) == 1);
    CHECK(due.at(j.tenant) == earliest);  // a bucket due first (ties: any of them)
    CHECK(due.at(j.tenant) <= f.now());
    ++leased;
    f.Complete(j);
    // Every release at its own time, so that schedules differ.
    f.clock().Advance(300);
    // Now and then a queued job leaves (its bucket's head may change).
    if (leased % 37 == 0) {
      for (const auto& [tenant, at] : due) {
        if (tenant == j.tenant) continue;
        JobFilter filter;
        filter.tenant = tenant;
        filter.queue = "q";
        filter.state = JobState::kQueued;
        auto list = f.store().ListJobs(filter);
        REQUIRE(list.ok());
        if (list.value().jobs.empty()) continue;
        REQUIRE(f.store().Cancel(list.value().jobs.back().id, f.now()).ok());
        ++canceled;
        break;
      }
    }
    // Once every tenant has released once, a new policy makes every entry one to check
    // again, and puts the buckets last by name first (a burst of 5 lets them release
    // 400 ms earlier than their TAT).
    if (!policy_changed && leased == kTenants) {
      QueuePolicy p = MakePolicy(10'000);
      for (int i = kTenants - 20; i < kTenants; ++i) p.tenants[Tenant(i)].burst = 5;
      f.PutQueue("q", p);
      policy_changed = true;
    }
  }
  CHECK(policy_changed);
  CHECK(leased + canceled == 3 * kTenants);
  CHECK(DueTimes(f, "q").empty());
}

TEST_CASE("Hundreds of buckets at their tenant cap release again as their leases end", "[store]") {
  StoreFixture f;
  QueuePolicy p = MakePolicy(1'000'000);  // rate is not what holds them
  p.bucket.burst = 10;
  p.bucket.max_inflight_per_tenant = 1;
  f.PutQueue("q", p);
  constexpr int kTenants = 200;
  for (int i = 0; i < kTenants; ++i) {
    f.Admit("q", Tenant(i));
    f.Admit("q", Tenant(i));
  }
  std::map<std::string, JobRecord> first;
  for (int round = 0; round < 10 && static_cast<int>(first.size()) < kTenants; ++round) {
    for (const JobRecord& j : f.Lease({"q"}, 100).jobs) {
      CHECK(first.count(j.tenant) == 0);  // one per tenant
      first.emplace(j.tenant, j);
    }
  }
  REQUIRE(static_cast<int>(first.size()) == kTenants);
  f.clock().Advance(kMicrosPerSecond);
  LeaseOutcome blocked = f.Lease({"q"}, 100);
  CHECK(blocked.jobs.empty());
  CHECK_FALSE(blocked.wake_at);  // only a lease ending can help
  CHECK(blocked.cap_blocked);

  // Leases of 70 tenants end: exactly those tenants release their second job.
  std::set<std::string> ended;
  for (int i = 0; i < 70; ++i) {
    const std::string t = Tenant(i * 2 + 1);
    f.Complete(first.at(t));
    ended.insert(t);
  }
  std::set<std::string> second;
  for (int round = 0; round < 10; ++round) {
    LeaseOutcome out = f.Lease({"q"}, 100);
    if (out.jobs.empty()) break;
    for (const JobRecord& j : out.jobs) second.insert(j.tenant);
  }
  CHECK(second == ended);
  // Folded counters (PostgreSQL keeps ended leases aside until maintenance) change
  // nothing: still nothing more to release.
  REQUIRE(f.store().ReapLeases(f.now()).ok());
  CHECK(f.Lease({"q"}, 100).jobs.empty());
}

TEST_CASE("A bucket whose jobs wait for not_before is released when one becomes available",
          "[store]") {
  StoreFixture f;
  f.PutQueue("q", MakePolicy(1'000'000));
  const Micros t0 = f.now();
  // 100 tenants whose only job waits 10 s, 100 whose job waits 20 s.
  for (int i = 0; i < 200; ++i) {
    NewJob j = StoreFixture::Job("q", Tenant(i));
    j.not_before = t0 + (i < 100 ? 10 : 20) * kMicrosPerSecond;
    f.Admit(j);
  }
  LeaseOutcome none = f.Lease({"q"}, 10);
  CHECK(none.jobs.empty());
  REQUIRE(none.wake_at);
  CHECK(*none.wake_at == t0 + 10 * kMicrosPerSecond);
  // A job available at once, to a tenant whose other job waits: released now.
  f.Admit("q", Tenant(150));
  LeaseOutcome now = f.Lease({"q"}, 10);
  REQUIRE(now.jobs.size() == 1);
  CHECK(now.jobs[0].tenant == Tenant(150));

  f.clock().Set(t0 + 10 * kMicrosPerSecond);
  std::set<std::string> at10;
  for (int round = 0; round < 5; ++round) {
    for (const JobRecord& j : f.Lease({"q"}, 100).jobs) at10.insert(j.tenant);
  }
  CHECK(at10.size() == 100);
  CHECK(*at10.begin() == Tenant(0));
  CHECK(*at10.rbegin() == Tenant(99));
  LeaseOutcome later = f.Lease({"q"}, 10);
  CHECK(later.jobs.empty());
  REQUIRE(later.wake_at);
  CHECK(*later.wake_at == t0 + 20 * kMicrosPerSecond);
  f.clock().Set(t0 + 20 * kMicrosPerSecond);
  size_t at20 = 0;
  for (int round = 0; round < 5; ++round) at20 += f.Lease({"q"}, 100).jobs.size();
  CHECK(at20 == 100);
}

}  // namespace
}  // namespace sluice
