#include "store/sqlite/sqlite_store.h"

namespace sluice {

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options) {
  auto driver = SqliteDriver::Open(options);
  if (!driver.ok()) return driver.error();
  const SqliteDriver& sqlite = *driver.value();
  return std::unique_ptr<SqliteStore>(new SqliteStore(
      sqlite, std::move(driver.value()), EngineOptions{std::move(options.unit_random)}));
}

}  // namespace sluice
