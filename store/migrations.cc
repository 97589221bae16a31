#include "store/migrations.h"

#include <algorithm>
#include <stdexcept>

#include "store/sql_files.h"

namespace sluice {

std::vector<Migration> MigrationsOf(std::string_view driver) {
  const std::string dir = "store/sql/" + std::string(driver) + "/migrations/";
  std::vector<Migration> out;
  for (const SqlFile& f : SqlFiles()) {
    if (f.path.substr(0, dir.size()) != dir) continue;
    std::string_view file = f.path.substr(dir.size());
    size_t digits = 0;
    while (digits < file.size() && file[digits] >= '0' && file[digits] <= '9') ++digits;
    if (digits == 0 || digits > 9 || digits >= file.size() || file[digits] != '_' ||
        file.size() < digits + 5 || file.substr(file.size() - 4) != ".sql") {
      throw std::invalid_argument("migration file name is not NNNN_name.sql: " +
                                  std::string(f.path));
    }
    Migration m;
    m.version = std::stoll(std::string(file.substr(0, digits)));
    m.name = std::string(file.substr(digits + 1, file.size() - digits - 5));
    m.text = f.text;
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].version < 2 || (i > 0 && out[i].version == out[i - 1].version)) {
      throw std::invalid_argument("migration " + std::to_string(out[i].version) + " of " +
                                  std::string(driver) + " is below 2 or given twice");
    }
  }
  return out;
}

int64_t LatestVersion(const std::vector<Migration>& migrations) {
  return migrations.empty() ? 1 : migrations.back().version;
}

}  // namespace sluice
