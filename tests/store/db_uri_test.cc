#include "store/db_uri.h"

#include <catch2/catch.hpp>

namespace sluice {
namespace {

TEST_CASE("A --db value is PostgreSQL only for a postgres URI", "[db_uri]") {
  CHECK(IsPostgresUri("postgres://u@h:5432/d"));
  CHECK(IsPostgresUri("postgresql://h/d"));
  CHECK_FALSE(IsPostgresUri("./sluice.db"));
  CHECK_FALSE(IsPostgresUri("/var/lib/postgres://x"));
}

TEST_CASE("A database URI prints without its password", "[db_uri]") {
  CHECK(RedactDb("./sluice.db") == "./sluice.db");
  CHECK(RedactDb("postgres://u@h:5432/d") == "postgres://u@h:5432/d");
  CHECK(RedactDb("postgres://u:s3cret@h:5432/d") == "postgres://u:***@h:5432/d");
  CHECK(RedactDb("postgresql://u:p%40ss@h/d?sslmode=require&password=x&a=b") ==
        "postgresql://u:***@h/d?sslmode=require&password=***&a=b");
  CHECK(RedactDb("postgres://h/d?password=x") == "postgres://h/d?password=***");
}

}  // namespace
}  // namespace sluice
