// What --db names: a PostgreSQL database (a libpq URI, postgres:// or postgresql://) or,
// anything else, a SQLite file. And how to print it without its password.
#pragma once

#include <string>

namespace sluice {

bool IsPostgresUri(const std::string& db);

// `db` with any password replaced by "***": the userinfo's (user:secret@host) and a
// password=... query parameter. A SQLite path is returned as it is.
std::string RedactDb(const std::string& db);

}  // namespace sluice
