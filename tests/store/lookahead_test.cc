// LeaseMany with a horizon: releases due by then are committed ahead, each at its own
// release time (leased_at), keeping the schedule exact; the dispatcher hands them out
// at that time.
#include <catch2/catch.hpp>

#include "tests/store/store_fixture.h"

namespace sluice::testing {
namespace {

LeaseRequest Req(int64_t max_jobs) {
  LeaseRequest r;
  r.queues = {"export"};
  r.max_jobs = max_jobs;
  return r;
}

TEST_CASE("A horizon releases what is due by then, each at its own release time", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));  // 1000/s: one release every 1000 µs
  for (int i = 0; i < 10; ++i) f.Admit("export", "acme");
  const Micros t0 = f.now();

  // Horizon 2500 µs: releases at t0, t0+1000, t0+2000; the next (t0+3000) waits. One
  // answer holds releases within 1 ms of its first, so the third goes to the second
  // waiter.
  auto out = f.store().LeaseMany({Req(10), Req(10)}, t0, t0 + 2500);
  REQUIRE(out[0].ok());
  REQUIRE(out[1].ok());
  std::vector<JobRecord> jobs = out[0].value().jobs;
  CHECK(jobs.size() == 2);
  REQUIRE(out[1].value().jobs.size() == 1);
  jobs.push_back(out[1].value().jobs[0]);
  REQUIRE(jobs.size() == 3);
  for (size_t i = 0; i < jobs.size(); ++i) {
    REQUIRE(jobs[i].leased_at);
    CHECK(*jobs[i].leased_at == t0 + static_cast<Micros>(i) * 1000);
    CHECK(*jobs[i].lease_expires_at == *jobs[i].leased_at + jobs[i].lease_ms * 1000);
  }
  // The schedule went on from the release times, not from when the commit happened.
  auto next = f.store().LeaseMany({Req(10)}, t0 + 2600, t0 + 2600);
  REQUIRE(next[0].ok());
  CHECK(next[0].value().jobs.empty());
  REQUIRE(next[0].value().wake_at);
  CHECK(*next[0].value().wake_at == t0 + 3000);
}

TEST_CASE("A head whose release time is not before its deadline is not leased ahead", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  const Micros t0 = f.now();
  f.Admit("export", "acme");  // released at t0
  NewJob j;
  j.queue = "export";
  j.tenant = "acme";
  j.deadline = t0 + 1500;  // its release time t0 + 1000 is before: fine
  f.Admit(j);
  NewJob late = j;
  late.deadline = t0 + 2001;  // estimated start t0 + 2000 < deadline: admitted
  f.Admit(late);
  // Lease at t0 with a horizon; then at t0 + 2001 the third job can only expire.
  auto out = f.store().LeaseMany({Req(2)}, t0, t0 + 1500);
  REQUIRE(out[0].ok());
  CHECK(out[0].value().jobs.size() == 2);
  auto after = f.store().LeaseMany({Req(1)}, t0 + 2001, t0 + 5000);
  REQUIRE(after[0].ok());
  CHECK(after[0].value().jobs.empty());  // expired: the deadline passed
}

}  // namespace
}  // namespace sluice::testing
