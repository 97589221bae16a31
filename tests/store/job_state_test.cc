// One place defines job states (STYLE.md "What that means here", 3): the enum in
// store/job_state.h, schema.sql's CHECK constraint and docs/state-machine.md list the
// same names, the store's SQL uses no other, and the database itself refuses others.
#include "store/job_state.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/store/store_fixture.h"

namespace sluice {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  INFO(path.string());
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> EnumNames() {
  std::set<std::string> names;
  for (JobState s : kAllJobStates) names.insert(std::string(JobStateName(s)));
  return names;
}

// The quoted names in a SQL list such as "'queued', 'leased'".
std::set<std::string> QuotedNames(const std::string& list) {
  std::set<std::string> names;
  static const std::regex kQuoted("'([^']*)'");
  for (std::sregex_iterator it(list.begin(), list.end(), kQuoted), end; it != end; ++it) {
    names.insert((*it)[1].str());
  }
  return names;
}

TEST_CASE("The enum's names are distinct, round-trip and match DESIGN.md", "[job_state]") {
  std::set<std::string> names = EnumNames();
  CHECK(names.size() == kAllJobStates.size());
  CHECK(names ==
        std::set<std::string>{"queued", "leased", "succeeded", "failed", "expired", "canceled"});
  for (JobState s : kAllJobStates) {
    CAPTURE(JobStateName(s));
    REQUIRE(ParseJobState(JobStateName(s)) == s);
  }
  CHECK_FALSE(ParseJobState("bogus"));
  CHECK_FALSE(ParseJobState("Queued"));
  CHECK_FALSE(ParseJobState(""));
  // DESIGN.md: terminal states are succeeded, failed, expired, canceled.
  std::set<std::string> terminal;
  for (JobState s : kAllJobStates) {
    if (IsTerminal(s)) terminal.insert(std::string(JobStateName(s)));
  }
  CHECK(terminal == std::set<std::string>{"succeeded", "failed", "expired", "canceled"});
}

// "state = 'a' OR state = 'b' ...", the form schema.sql's CHECKs use (see there why).
#define SLUICE_STATE_CHAIN R"((state\s*=\s*'[^']*'(?:\s+OR\s+state\s*=\s*'[^']*')*))"

TEST_CASE("schema.sql's CHECK on state lists exactly the enum's names", "[job_state]") {
  std::string schema = ReadFile(fs::path(SLUICE_SOURCE_DIR) / "schema.sql");
  static const std::regex kStateCheck(R"(CHECK\s*\(\s*)" SLUICE_STATE_CHAIN R"(\s*\))",
                                      std::regex::icase);
  std::smatch m;
  REQUIRE(std::regex_search(schema, m, kStateCheck));
  CHECK(QuotedNames(m[1].str()) == EnumNames());
  std::string rest = m.suffix().str();
  CHECK_FALSE(std::regex_search(rest, kStateCheck));  // one such list, not two

  // The "finished_at is set exactly in terminal states" CHECK agrees with IsTerminal.
  static const std::regex kTerminalCheck(R"(CHECK\s*\(\s*\(\s*)" SLUICE_STATE_CHAIN
                                         R"(\s*\)\s*=\s*\(\s*finished_at\s+IS\s+NOT\s+NULL)",
                                         std::regex::icase);
  REQUIRE(std::regex_search(schema, m, kTerminalCheck));
  std::set<std::string> terminal;
  for (JobState s : kAllJobStates) {
    if (IsTerminal(s)) terminal.insert(std::string(JobStateName(s)));
  }
  CHECK(QuotedNames(m[1].str()) == terminal);
}

TEST_CASE("The store's SQL compares state only with the enum's names", "[job_state]") {
  // Every `state = '...'` and `state IN (...)` in schema.sql and in store/ sources.
  std::vector<fs::path> files = {fs::path(SLUICE_SOURCE_DIR) / "schema.sql"};
  for (const auto& e : fs::recursive_directory_iterator(fs::path(SLUICE_SOURCE_DIR) / "store")) {
    std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cc" || ext == ".sql" || ext == ".h")) {
      files.push_back(e.path());
    }
  }
  static const std::regex kEquals(R"(state\s*(?:=|<>|!=)\s*('[^']*'))", std::regex::icase);
  static const std::regex kIn(R"(state\s+(?:NOT\s+)?IN\s*\(([^)]*)\))", std::regex::icase);
  std::set<std::string> known = EnumNames();
  size_t literals = 0;
  for (const fs::path& file : files) {
    std::string text = ReadFile(file);
    for (const std::regex* re : {&kEquals, &kIn}) {
      for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
        for (const std::string& name : QuotedNames((*it)[1].str())) {
          CAPTURE(file.string(), name);
          CHECK(known.count(name) == 1);
          ++literals;
        }
      }
    }
  }
  CHECK(literals > 10);  // the scan did find the store's SQL
}

TEST_CASE("docs/state-machine.md names every state", "[job_state]") {
  fs::path doc = fs::path(SLUICE_SOURCE_DIR) / "docs" / "state-machine.md";
  if (!fs::exists(doc)) {
    WARN("docs/state-machine.md does not exist yet; skipped");
    return;
  }
  std::string text = ReadFile(doc);
  for (const std::string& name : EnumNames()) {
    CAPTURE(name);
    CHECK(std::regex_search(text, std::regex("\\b" + name + "\\b")));
  }
}

// Inserts one row straight into jobs, bypassing the store; returns sqlite's result code.
int InsertRaw(sqlite3* db, const std::string& state, bool with_lease, bool finished) {
  const char* sql =
      "INSERT INTO jobs (id, queue, tenant, state, payload, cost, max_attempts, lease_ms, "
      "policy_version, created_at, available_at, estimated_start, lease_id, lease_expires_at, "
      "finished_at) VALUES (?1, 'q', 't', ?2, 'null', 1, 1, 1000, 1, 0, 0, 0, ?3, ?4, ?5)";
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
  std::string id = "job_raw_" + state;
  sqlite3_bind_text(stmt, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, state.c_str(), -1, SQLITE_TRANSIENT);
  if (with_lease) {
    sqlite3_bind_text(stmt, 3, "lse_raw", -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, 1'000'000);
  }
  if (finished) sqlite3_bind_int64(stmt, 5, 1);
  int rc = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  return rc;
}

TEST_CASE("The database rejects a state that is not in the enum", "[job_state]") {
  testing::StoreFixture f;  // applies schema.sql to a fresh file
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(f.db_path().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);

  // Every enum state is accepted (with the lease / finished_at its CHECKs ask for)...
  for (JobState s : kAllJobStates) {
    std::string name(JobStateName(s));
    CAPTURE(name);
    CHECK(InsertRaw(db, name, s == JobState::kLeased, IsTerminal(s)) == SQLITE_DONE);
  }
  // ...and anything else is refused by the CHECK, whatever the other columns hold.
  for (const char* bogus : {"bogus", "Queued", "running", ""}) {
    CAPTURE(bogus);
    CHECK(InsertRaw(db, bogus, false, false) == SQLITE_CONSTRAINT_CHECK);
    CHECK(InsertRaw(db, bogus, false, true) == SQLITE_CONSTRAINT_CHECK);
  }
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM jobs", -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  CHECK(sqlite3_column_int64(stmt, 0) == static_cast<int64_t>(kAllJobStates.size()));
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST_CASE("The database enforces lease and finished_at per state", "[job_state]") {
  testing::StoreFixture f;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(f.db_path().c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  for (JobState s : kAllJobStates) {
    std::string name(JobStateName(s));
    CAPTURE(name);
    // Flip the lease, then finished_at, from what the state requires.
    CHECK(InsertRaw(db, name, s != JobState::kLeased, IsTerminal(s)) == SQLITE_CONSTRAINT_CHECK);
    CHECK(InsertRaw(db, name, s == JobState::kLeased, !IsTerminal(s)) == SQLITE_CONSTRAINT_CHECK);
  }
  sqlite3_close(db);
}

}  // namespace
}  // namespace sluice
