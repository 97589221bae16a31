#include "tests/fuzz/route_table.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "server/app.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/temp_dir.h"

namespace sluice::fuzz {
namespace {

// Everything an App borrows. Never destroyed: the store's threads run until the
// process exits, and nothing of it is freed while a target might route.
struct Fixture {
  explicit Fixture(const std::string& db)
      : store(Open(db)),
        auth(*store, "fuzz-admin-token"),
        dispatcher(io, *store, clock),
        app{*store, auth, dispatcher, clock, metrics} {
    RegisterRoutes(router, app);
  }

  static std::unique_ptr<SqliteStore> Open(const std::string& db) {
    SqliteStoreOptions options;
    options.path = db;
    options.synchronous = "OFF";
    auto opened = SqliteStore::Open(options);
    if (!opened.ok()) {
      std::fprintf(stderr, "route table: cannot open %s: %s\n", db.c_str(),
                   opened.error().detail.c_str());
      std::abort();
    }
    return std::move(opened.value());
  }

  boost::asio::io_context io;
  SystemClock clock;
  Metrics metrics;
  std::unique_ptr<SqliteStore> store;
  Authenticator auth;
  Dispatcher dispatcher;
  App app;
  Router router;
};

}  // namespace

const Router& RealRoutes() {
  static testing::TempDir dir;  // removed at exit
  static Fixture* fixture = new Fixture(dir.File("routes.db"));
  return fixture->router;
}

}  // namespace sluice::fuzz
