// The store on a PostgreSQL database: the engine (store/engine/) over the PostgreSQL
// driver (store/postgres/pg_driver.h). Several processes may share one database.
// Thread-safe.
#pragma once

#include <memory>

#include "store/engine/engine.h"
#include "store/postgres/pg_driver.h"

namespace sluice {

class PgStore final : public Engine {
 public:
  // Connects (storage_unavailable "cannot open database: ..." if it cannot), brings the
  // schema to the latest version and prepares the statements.
  static Result<std::unique_ptr<PgStore>> Open(PgStoreOptions options);

 private:
  PgStore(std::unique_ptr<Driver> driver, EngineOptions options)
      : Engine(std::move(driver), std::move(options)) {}
};

}  // namespace sluice
