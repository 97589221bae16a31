// The PostgreSQL test server (tests/testutil/pg_server.h): it answers, hands out
// separate databases, commits durably, and survives a stop and a start.
#include "tests/testutil/pg_server.h"

#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "tests/testutil/subprocess.h"

namespace sluice {
namespace {

using testing::Eventually;
using testing::PgServer;

using Conn = std::unique_ptr<PGconn, decltype(&PQfinish)>;

Conn Connect(const std::string& uri) { return Conn(PQconnectdb(uri.c_str()), &PQfinish); }

// The first column of the first row of `sql`, or "" with the error in INFO.
std::string QueryOne(PGconn* conn, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn, sql.c_str()), &PQclear);
  INFO(PQerrorMessage(conn));
  REQUIRE(PQresultStatus(res.get()) == PGRES_TUPLES_OK);
  REQUIRE(PQntuples(res.get()) == 1);
  return PQgetvalue(res.get(), 0, 0);
}

TEST_CASE("The shared PostgreSQL server answers SELECT 1", "[pg]") {
  Conn conn = Connect(PgServer::Shared().CreateDatabase());
  INFO(PQerrorMessage(conn.get()));
  REQUIRE(PQstatus(conn.get()) == CONNECTION_OK);
  CHECK(QueryOne(conn.get(), "SELECT 1") == "1");
}

TEST_CASE("Two CreateDatabase calls give two distinct databases", "[pg]") {
  PgServer& server = PgServer::Shared();
  const std::string a = server.CreateDatabase();
  const std::string b = server.CreateDatabase();
  REQUIRE(a != b);
  Conn ca = Connect(a);
  Conn cb = Connect(b);
  REQUIRE(PQstatus(ca.get()) == CONNECTION_OK);
  REQUIRE(PQstatus(cb.get()) == CONNECTION_OK);
  CHECK(QueryOne(ca.get(), "SELECT current_database()") !=
        QueryOne(cb.get(), "SELECT current_database()"));
  // A table made in one is not in the other.
  PQclear(PQexec(ca.get(), "CREATE TABLE only_in_a (x int)"));
  CHECK(QueryOne(ca.get(), "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'") == "1");
  CHECK(QueryOne(cb.get(), "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'") == "0");
}

TEST_CASE("The PostgreSQL test server commits durably", "[pg]") {
  Conn conn = Connect(PgServer::Shared().CreateDatabase());
  REQUIRE(PQstatus(conn.get()) == CONNECTION_OK);
  CHECK(QueryOne(conn.get(), "SHOW synchronous_commit") == "on");
  CHECK(QueryOne(conn.get(), "SHOW fsync") == "on");
  CHECK(QueryOne(conn.get(), "SELECT setting FROM pg_settings WHERE name = 'max_connections'") ==
        "200");
}

TEST_CASE("A stopped PostgreSQL server refuses connections until it is started again", "[pg]") {
  PgServer server;  // a private one: the shared server stays up for the other tests
  const std::string uri = server.CreateDatabase();
  const int port = server.port();
  auto connects = [&] { return PQstatus(Connect(uri).get()) == CONNECTION_OK; };
  REQUIRE(connects());
  Conn held = Connect(uri);
  REQUIRE(PQstatus(held.get()) == CONNECTION_OK);

  server.Stop();
  CHECK_FALSE(server.running());
  CHECK_FALSE(connects());
  // A connection open across the stop was cut.
  std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(held.get(), "SELECT 1"), &PQclear);
  CHECK(PQresultStatus(res.get()) != PGRES_TUPLES_OK);

  server.Start();
  CHECK(server.running());
  CHECK(server.port() == port);
  // The database made before the outage is still there.
  CHECK(Eventually(connects, std::chrono::milliseconds(10000)));
}

}  // namespace
}  // namespace sluice
