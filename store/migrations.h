// Numbered migrations, per driver: the files store/sql/<driver>/migrations/NNNN_name.sql
// compiled into the binary, in version order. Version 1 is each driver's baseline
// schema (store/sql/<driver>/ names it); the files start at 2.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct Migration {
  int64_t version = 0;
  std::string name;       // the file name without the number and ".sql"
  std::string_view text;  // the SQL, run as one script in one transaction
};

// The migrations of `driver` ("sqlite", "postgres"), ascending; throws
// std::invalid_argument for a file name without a number or a number given twice.
std::vector<Migration> MigrationsOf(std::string_view driver);

// The version a database is at once every migration has run: the highest, or 1.
int64_t LatestVersion(const std::vector<Migration>& migrations);

}  // namespace sluice
