// Lease ids name their job's seq (common/random.h), so that the SQLite driver finds the
// job of an ack, fail or heartbeat by the table's key. What is checked here: the format
// reads back and refuses anything else; a lease id guards its own job only, on either
// driver, whatever seq it names; and leases made before the format (a lease in flight
// across an upgrade) still complete, fail and heartbeat on SQLite.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "common/random.h"
#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

using testing::MakePolicy;
using testing::StoreFixture;

TEST_CASE("A lease id reads back as its seq; any other string names none", "[ids]") {
  std::set<std::string> seen;
  for (int64_t seq : {int64_t{0}, int64_t{1}, int64_t{42}, int64_t{0x0123456789abcdef},
                      std::numeric_limits<int64_t>::max()}) {
    CAPTURE(seq);
    const std::string id = NewLeaseId(seq);
    CHECK(id.size() == 44);
    CHECK(id.rfind("lse_", 0) == 0);
    CHECK(SeqOfLeaseId(id) == seq);
    CHECK(NewLeaseId(seq) != id);  // the random part differs
    seen.insert(id.substr(0, 20));
  }
  CHECK(seen.size() == 5);

  const std::string good = NewLeaseId(7);
  CHECK_FALSE(SeqOfLeaseId(RandomId("lse_", 12)));  // the form before: no seq
  CHECK_FALSE(SeqOfLeaseId(""));
  CHECK_FALSE(SeqOfLeaseId("lse_"));
  CHECK_FALSE(SeqOfLeaseId("job_" + good.substr(4)));
  CHECK_FALSE(SeqOfLeaseId(good + "0"));
  CHECK_FALSE(SeqOfLeaseId(good.substr(0, 43)));
  for (size_t at : {size_t{4}, size_t{19}, size_t{20}, size_t{43}}) {
    CAPTURE(at);
    for (char c : {'A', 'g', '-', ' ', '\0'}) {
      std::string bad = good;
      bad[at] = c;
      CHECK_FALSE(SeqOfLeaseId(bad));
    }
  }
  // A seq above the largest int64 is no seq.
  CHECK_FALSE(SeqOfLeaseId("lse_8000000000000000" + good.substr(20)));
  CHECK(SeqOfLeaseId("lse_7fffffffffffffff" + good.substr(20)) ==
        std::numeric_limits<int64_t>::max());
}

TEST_CASE("A lease id guards its own job only, whatever seq it names", "[store]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  const JobRecord a = f.Admit("export", "acme");
  const JobRecord b = f.Admit("export", "globex");
  LeaseOutcome out = f.Lease({"export"}, 2);
  REQUIRE(out.jobs.size() == 2);
  JobRecord la = out.jobs[0].id == a.id ? out.jobs[0] : out.jobs[1];
  JobRecord lb = out.jobs[0].id == a.id ? out.jobs[1] : out.jobs[0];
  REQUIRE(la.id == a.id);
  REQUIRE(lb.id == b.id);
  REQUIRE(la.lease_id);
  REQUIRE(lb.lease_id);
  CHECK(SeqOfLeaseId(*la.lease_id));
  CHECK(SeqOfLeaseId(*la.lease_id) != SeqOfLeaseId(*lb.lease_id));

  std::string forged = *la.lease_id;  // a's seq, another random part
  forged.back() = forged.back() == '0' ? '1' : '0';
  for (const std::string& wrong : {*lb.lease_id, forged}) {
    CAPTURE(wrong);
    auto done = f.store().Complete(a.id, wrong, std::nullopt, f.now());
    REQUIRE_FALSE(done.ok());
    CHECK(done.error().code == ErrorCode::kLeaseLost);
    auto beat = f.store().Heartbeat(a.id, wrong, 60'000, f.now());
    REQUIRE_FALSE(beat.ok());
    CHECK(beat.error().code == ErrorCode::kLeaseLost);
    auto failed = f.store().Fail(a.id, wrong, FailRequest{"boom", false, std::nullopt}, f.now());
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().code == ErrorCode::kLeaseLost);
  }
  // b's lease on b's id is b's, not a's.
  CHECK(f.Get(a.id).state == JobState::kLeased);
  CHECK(f.Get(b.id).state == JobState::kLeased);
  CHECK(f.Get(a.id).lease_expires_at == la.lease_expires_at);

  CHECK(f.Complete(la).state == JobState::kSucceeded);
  CHECK(f.Get(b.id).state == JobState::kLeased);
  CHECK(f.Complete(lb).state == JobState::kSucceeded);
}

// Sets a job's lease id to `lease_id` through a connection of its own.
void SetLeaseId(const std::string& db_path, const std::string& id, const std::string& lease_id) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "UPDATE jobs SET lease_id = ?1 WHERE id = ?2", -1, &stmt,
                             nullptr) == SQLITE_OK);
  sqlite3_bind_text(stmt, 1, lease_id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, id.c_str(), -1, SQLITE_TRANSIENT);
  CHECK(sqlite3_step(stmt) == SQLITE_DONE);
  CHECK(sqlite3_changes(db) == 1);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_CASE("A lease of the form before (no seq) still completes, fails and heartbeats", "[sqlite]") {
  StoreFixture f;
  f.PutQueue("export", MakePolicy(1'000'000));
  for (const char* tenant : {"a", "b", "c"}) f.Admit("export", tenant);
  LeaseOutcome out = f.Lease({"export"}, 3);
  REQUIRE(out.jobs.size() == 3);
  std::vector<std::string> old;
  for (const JobRecord& j : out.jobs) {
    old.push_back(RandomId("lse_", 12));
    REQUIRE_FALSE(SeqOfLeaseId(old.back()));
    SetLeaseId(f.db_path(), j.id, old.back());
  }
  // Another job's old lease is still refused.
  auto wrong = f.store().Complete(out.jobs[0].id, old[1], std::nullopt, f.now());
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::kLeaseLost);

  f.clock().Advance(1000);
  auto beat = f.store().Heartbeat(out.jobs[0].id, old[0], 60'000, f.now());
  REQUIRE(beat.ok());
  CHECK(beat.value().lease_expires_at == f.now() + 60'000 * 1000);
  auto done = f.store().Complete(out.jobs[1].id, old[1], std::string("1"), f.now());
  REQUIRE(done.ok());
  CHECK(done.value().state == JobState::kSucceeded);
  auto failed =
      f.store().Fail(out.jobs[2].id, old[2], FailRequest{"boom", false, std::nullopt}, f.now());
  REQUIRE(failed.ok());
  CHECK(failed.value().state == JobState::kFailed);
}

}  // namespace
}  // namespace sluice
