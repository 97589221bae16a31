// The SQLite schema's versions: a database made before versions began (the fixture,
// built by tests/store/fixtures/make_unversioned_db.sh with the release of 2026-12-01)
// opens and upgrades in place, keeping everything; a new database gets the same schema
// from schema.sql; a database newer than the binary is refused.
#include "store/migrations.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>

#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/manual_clock.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::TempDir;

// The fixture is kept as the `sqlite3 .dump` of that database (text, not a binary
// file): its tables as the old release created them, and their rows.
const char* kFixture = SLUICE_SOURCE_DIR "/tests/store/fixtures/unversioned-2026-12-01.sql";

std::unique_ptr<SqliteStore> OpenStore(const std::string& path) {
  SqliteStoreOptions options;
  options.path = path;
  options.unit_random = [] { return 0.5; };
  auto opened = SqliteStore::Open(options);
  INFO((opened.ok() ? std::string() : opened.error().detail));
  REQUIRE(opened.ok());
  return std::move(opened.value());
}

std::string CopyFixture(const TempDir& dir) {
  std::string path = dir.File("old.db");
  std::ifstream in(kFixture);
  REQUIRE(in);
  std::string dump((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  sqlite::Db db(path, "FULL", 5000);
  db.Exec(dump);
  return path;
}

std::vector<int64_t> Versions(const std::string& path) {
  sqlite::Db db(path, "FULL", 5000);
  sqlite::Stmt s = db.Prepare("SELECT version FROM schema_migrations ORDER BY version");
  std::vector<int64_t> out;
  while (s.Step()) out.push_back(s.Int(0));
  return out;
}

// `sql` without comments, its whitespace collapsed: SQLite keeps a CREATE statement's
// text as written, comments included.
std::string Normalized(const std::string& sql) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < sql.size(); ++i) {
    if (sql.compare(i, 2, "--") == 0) {
      while (i < sql.size() && sql[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(sql[i]))) {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(sql[i]);
  }
  return out;
}

// Every table and index with its SQL (normalized).
std::set<std::tuple<std::string, std::string, std::string>> SchemaOf(const std::string& path) {
  sqlite::Db db(path, "FULL", 5000);
  sqlite::Stmt s = db.Prepare(
      "SELECT type, name, COALESCE(sql, '') FROM sqlite_master "
      "WHERE name NOT LIKE 'sqlite_%'");
  std::set<std::tuple<std::string, std::string, std::string>> out;
  while (s.Step()) out.emplace(s.Text(0), s.Text(1), Normalized(s.Text(2)));
  return out;
}

bool HasTable(const std::string& path, const std::string& table) {
  sqlite::Db db(path, "FULL", 5000);
  sqlite::Stmt s = db.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.BindAll(table);
  return s.Step();
}

TEST_CASE("A database made before schema versions upgrades in place and keeps its data",
          "[sqlite][migrations]") {
  TempDir dir;
  const std::string path = CopyFixture(dir);
  REQUIRE(HasTable(path, "jobs"));
  REQUIRE_FALSE(HasTable(path, "schema_migrations"));

  auto store = OpenStore(path);
  const int64_t latest = LatestVersion(MigrationsOf("sqlite"));
  std::vector<int64_t> expected;
  for (int64_t v = 1; v <= latest; ++v) expected.push_back(v);
  CHECK(Versions(path) == expected);

  // What the old release stored is all there.
  auto q = store->GetQueue("exports");
  REQUIRE(q.ok());
  CHECK(q.value().version == 1);
  CHECK(q.value().policy.ForTenant("acme").rate_milli == 50'000);
  CHECK(q.value().stats.queued == 2);
  CHECK(q.value().stats.leased == 1);
  CHECK(q.value().stats.totals.admitted == 6);
  JobFilter all;
  all.limit = 100;
  auto jobs = store->ListJobs(all);
  REQUIRE(jobs.ok());
  std::multiset<std::string> states;
  for (const JobRecord& j : jobs.value().jobs) states.insert(std::string(JobStateName(j.state)));
  CHECK(states == std::multiset<std::string>{"canceled", "failed", "leased", "queued", "queued",
                                             "succeeded"});
  auto tokens = store->ListTokens();
  REQUIRE(tokens.ok());
  CHECK(tokens.value().size() == 3);
  int revoked = 0;
  for (const TokenRecord& t : tokens.value()) revoked += t.revoked ? 1 : 0;
  CHECK(revoked == 1);

  // An old Idempotency-Key still guards its job: reused with another body it is refused.
  NewJob again;
  again.queue = "exports";
  again.tenant = "acme";
  again.idempotency_key = "key-1";
  again.body_hash = "another body";
  testing::ManualClock clock;
  auto replay = store->Submit(again, clock.Now());
  REQUIRE_FALSE(replay.ok());
  CHECK(replay.error().code == ErrorCode::kIdempotencyKeyReused);

  // And it works on: the old lease (60 s, long past) lapses and fails for good
  // (max_attempts 1); the two queued jobs and a new one are leased and complete.
  NewJob fresh;
  fresh.queue = "exports";
  fresh.tenant = "acme";
  auto admitted = store->Submit(fresh, clock.Now());
  REQUIRE(admitted.ok());
  CHECK(admitted.value().decision.outcome == AdmissionOutcome::kAdmitted);
  LeaseRequest req;
  req.queues = {"exports"};
  req.max_jobs = 10;
  req.worker_id = "w";
  // acme's rate is 50/s with a burst of 1: one release per lease, a second apart.
  size_t completed = 0;
  for (int i = 0; i < 3; ++i) {
    auto leased = store->LeaseMany({req}, clock.Now());
    REQUIRE(leased[0].ok());
    for (const JobRecord& j : leased[0].value().jobs) {
      CHECK(store->Complete(j.id, *j.lease_id, std::nullopt, clock.Now()).ok());
      ++completed;
    }
    clock.Advance(kMicrosPerSecond);
  }
  CHECK(completed == 3);
  auto after = store->GetQueue("exports");
  REQUIRE(after.ok());
  CHECK(after.value().stats.totals.succeeded == 4);
  CHECK(after.value().stats.totals.failed == 2);
  CHECK(after.value().stats.totals.lease_timeouts == 1);

  // Opening again changes nothing.
  store.reset();
  store = OpenStore(path);
  CHECK(Versions(path) == expected);
}

TEST_CASE("A new database gets the schema an upgraded one has", "[sqlite][migrations]") {
  TempDir dir;
  const std::string old_path = CopyFixture(dir);
  const std::string new_path = dir.File("new.db");
  OpenStore(old_path).reset();
  OpenStore(new_path).reset();
  auto upgraded = SchemaOf(old_path);
  auto fresh = SchemaOf(new_path);
  CHECK(upgraded == fresh);
  CHECK(Versions(old_path).back() == Versions(new_path).back());
}

TEST_CASE("Migration 2 drops the index that jobs_delayed replaced", "[sqlite][migrations]") {
  TempDir dir;
  const std::string path = CopyFixture(dir);
  {
    sqlite::Db old(path, "FULL", 5000);
    old.Exec(
        "CREATE INDEX jobs_queued_available ON jobs (queue, available_at) "
        "WHERE state = 'queued'");
  }
  OpenStore(path).reset();
  sqlite::Db db(path, "FULL", 5000);
  sqlite::Stmt s = db.Prepare(
      "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN "
      "('jobs_queued_available', 'jobs_delayed') ORDER BY name");
  std::vector<std::string> names;
  while (s.Step()) names.push_back(s.Text(0));
  CHECK(names == std::vector<std::string>{"jobs_delayed"});
}

TEST_CASE("A database at a newer schema version than the binary is refused",
          "[sqlite][migrations]") {
  TempDir dir;
  const std::string path = dir.File("t.db");
  OpenStore(path).reset();
  {
    sqlite::Db db(path, "FULL", 5000);
    db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'x', 0)");
  }
  SqliteStoreOptions options;
  options.path = path;
  auto opened = SqliteStore::Open(options);
  REQUIRE_FALSE(opened.ok());
  CHECK_THAT(opened.error().detail, Catch::Contains("schema version 9999"));
}

TEST_CASE("Migration files are numbered from 2 in order", "[sqlite][migrations]") {
  auto migrations = MigrationsOf("sqlite");
  REQUIRE_FALSE(migrations.empty());
  CHECK(migrations.front().version == 2);
  for (size_t i = 1; i < migrations.size(); ++i) {
    CHECK(migrations[i].version > migrations[i - 1].version);
  }
  CHECK(migrations.front().name == "drop_jobs_queued_available");
}

}  // namespace
}  // namespace sluice
