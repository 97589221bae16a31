// The store on one SQLite file: the engine (store/engine/) over the SQLite driver.
// Thread-safe.
#pragma once

#include <memory>

#include "store/engine/engine.h"
#include "store/sqlite/sqlite_driver.h"

namespace sluice {

class SqliteStore final : public Engine {
 public:
  static Result<std::unique_ptr<SqliteStore>> Open(SqliteStoreOptions options);

  // The writer's counters, for benchmarks and metrics.
  const Writer& writer() const { return sqlite_.writer(); }

 private:
  SqliteStore(const SqliteDriver& sqlite, std::unique_ptr<Driver> driver, EngineOptions options)
      : Engine(std::move(driver), std::move(options)), sqlite_(sqlite) {}

  const SqliteDriver& sqlite_;  // owned by the engine
};

}  // namespace sluice
