// The Checkpointer (store/checkpointer.h): under a steady stream of commits the WAL
// starts over from its beginning instead of growing without end.
#include "store/sqlite/checkpointer.h"

#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "store/sqlite/sqlite.h"
#include "store/sqlite/writer.h"
#include "tests/testutil/temp_dir.h"

namespace sluice {
namespace {

using testing::TempDir;

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

TEST_CASE("Under a steady stream of commits the WAL starts over instead of growing",
          "[checkpointer]") {
  TempDir dir;
  const std::string path = dir.File("c.db");
  auto db = std::make_unique<sqlite::Db>(path, "FULL", 5000);
  db->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)");
  constexpr int kThresholdPages = 64;
  Checkpointer checkpointer(path, *db, kThresholdPages);
  Writer writer(std::move(db));
  writer.SetAfterCommit([&] { return checkpointer.TailDue(); },
                        [&](sqlite::Db& d) { checkpointer.CopyTail(d); });

  // Each commit adds a row of 3000 bytes: a new leaf page (and its parent) per commit,
  // so without the WAL starting over it would hold at least kCommits frames.
  constexpr int kCommits = 1500;
  int64_t largest_wal = 0;
  for (int64_t k = 0; k < kCommits; ++k) {
    auto r = writer.Run<Ok>([k](sqlite::Db& d) -> Status {
      d.Prepare("INSERT INTO t (k, v) VALUES (?, zeroblob(3000))").BindAll(k).Exec();
      return Ok{};
    });
    REQUIRE(r.ok());
    largest_wal = std::max(largest_wal, FileSize(path + "-wal"));
  }
  const int64_t frame = 4096 + 24;
  CAPTURE(largest_wal / frame);
  // Bounded by the threshold plus what a background checkpoint lets accumulate while it
  // runs: far below one frame per commit.
  CHECK(largest_wal < frame * kCommits / 3);
  CHECK(largest_wal > 0);
}

}  // namespace
}  // namespace sluice
