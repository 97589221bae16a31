#include "store/postgres/pg_store.h"

namespace sluice {

Result<std::unique_ptr<PgStore>> PgStore::Open(PgStoreOptions options) {
  auto driver = PgDriver::Open(options);
  if (!driver.ok()) return driver.error();
  return std::unique_ptr<PgStore>(
      new PgStore(std::move(driver.value()), EngineOptions{std::move(options.unit_random)}));
}

}  // namespace sluice
