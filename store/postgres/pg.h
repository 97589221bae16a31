// Thin RAII wrappers over libpq, private to store/postgres/: a connection that prepares
// its statement set once, results that free themselves, and text-format parameters.
// Every failure — a statement the server refused, a connection that is gone — is thrown
// as PgError (with the SQLSTATE when the server sent one) and turned into a sluice::Error
// at the driver boundary (pg_driver.cc). Every result's status is checked.
// A Connection is used by one thread at a time; a Rows by the thread that got it.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace sluice::pg {

class PgError : public std::runtime_error {
 public:
  // `sqlstate`: the five-character code the server sent, or "" when libpq failed on its
  // own (no connection, lost connection, out of memory).
  PgError(std::string sqlstate, const std::string& what)
      : std::runtime_error(what), sqlstate_(std::move(sqlstate)) {}
  const std::string& sqlstate() const { return sqlstate_; }

 private:
  std::string sqlstate_;
};

// SQLSTATEs the driver retries in a fresh transaction.
inline constexpr std::string_view kSerializationFailure = "40001";
inline constexpr std::string_view kDeadlockDetected = "40P01";
inline constexpr std::string_view kUniqueViolation = "23505";
inline constexpr std::string_view kForeignKeyViolation = "23503";

// A statement's result, freed when it dies. Values are read in text format.
class Rows {
 public:
  explicit Rows(PGresult* res) : res_(res, &PQclear) {}

  int size() const { return PQntuples(res_.get()); }
  bool empty() const { return size() == 0; }
  // Rows a command changed (INSERT, UPDATE, DELETE); 0 for any other.
  int64_t affected() const;

  bool IsNull(int row, int col) const { return PQgetisnull(res_.get(), row, col) != 0; }
  std::string Text(int row, int col) const;
  // A bigint (or integer) column; throws PgError on a value that is not one.
  int64_t Int(int row, int col) const;
  bool Bool(int row, int col) const;  // 't' or 'f'
  std::optional<int64_t> OptInt(int row, int col) const;
  std::optional<std::string> OptText(int row, int col) const;

 private:
  std::unique_ptr<PGresult, decltype(&PQclear)> res_;
};

// A one-dimensional array parameter in text format ('{"a",NULL,"b\\"c"}'): every element
// quoted (backslash and double quote escaped), NULL for nullopt; the statement casts it
// ($1::text[], $2::bigint[]).
std::string ArrayLiteral(const std::vector<std::optional<std::string>>& values);

// Parameters in text format, NULL as nullopt.
class Params {
 public:
  Params() = default;
  template <typename... Args>
  explicit Params(Args&&... args) {
    values_.reserve(sizeof...(args));
    (Add(std::forward<Args>(args)), ...);
  }

  Params& Add(int64_t v) { return Add(std::optional<std::string>(std::to_string(v))); }
  Params& Add(int v) { return Add(static_cast<int64_t>(v)); }
  Params& Add(bool v) { return Add(std::optional<std::string>(v ? "true" : "false")); }
  Params& Add(const std::string& v) { return Add(std::optional<std::string>(v)); }
  Params& Add(const char* v) { return Add(std::optional<std::string>(v)); }
  Params& Add(const std::optional<int64_t>& v) {
    return v ? Add(*v) : Add(std::optional<std::string>());
  }
  Params& Add(std::optional<std::string> v) {
    values_.push_back(std::move(v));
    return *this;
  }

  const std::vector<std::optional<std::string>>& values() const { return values_; }

 private:
  std::vector<std::optional<std::string>> values_;
};

class Connection {
 public:
  // Connects to `uri` (a libpq URI or key=value string; unless it says otherwise, a
  // connect_timeout of 10 s, TCP keepalives and a 30 s tcp_user_timeout apply), sets
  // synchronous_commit on (so a COMMIT returns once durable) and silences the server's
  // notices. Throws PgError if it cannot.
  explicit Connection(const std::string& uri);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prepares `sql` under `name` on this connection (once per connection; the server keeps
  // it until the connection closes).
  void Prepare(const std::string& name, const std::string& sql);

  // Opens a transaction with `begin` (BEGIN ...), sent with the statement that follows
  // (pipelined: one round trip for both); a transaction that runs no statement is never
  // sent (Exec of COMMIT or ROLLBACK then does nothing).
  void BeginLazily(std::string begin);
  // Queues a prepared statement whose result the caller does not read (a write), to be
  // sent in one pipeline with the next statement that is run (or with COMMIT, or before
  // any other statement): a failure is thrown there. ROLLBACK drops what is queued.
  void Defer(const char* name, Params params);
  // A statement without parameters, queued the same way (e.g. a SET LOCAL after BEGIN).
  void DeferSql(std::string sql);

  // Runs a prepared statement (after whatever is queued); throws PgError unless it
  // succeeded.
  Rows ExecPrepared(const char* name, const Params& params);
  // Runs prepared statements in their order, in one round trip with whatever is queued;
  // each one's result. Each statement starts once the one before it has finished (its
  // snapshot sees what that one waited for).
  std::vector<Rows> ExecPreparedAll(std::vector<std::pair<const char*, Params>> statements);
  // Runs one statement with $n parameters, unprepared.
  Rows ExecParams(const std::string& sql, const Params& params);
  // Runs a script of statements without parameters (BEGIN, COMMIT, a schema file); the
  // last statement's result.
  Rows Exec(const std::string& sql);

  // Whether the connection is still usable (false once the server hung up). libpq only
  // finds out on the next exchange, so true does not promise the server is there.
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }
  // Whether the connection is inside a transaction block (or a failed one), or has one
  // to open (BeginLazily).
  bool InTransaction() const;

  // For LISTEN: the socket to wait on, this session's backend pid, and the
  // notifications that arrived (reading what the socket has first). TakeNotifications
  // throws PgError once the connection is gone.
  struct Notification {
    int backend_pid;
    std::string channel;
    std::string payload;
  };
  int Socket() const { return PQsocket(conn_); }
  int BackendPid() const { return PQbackendPID(conn_); }
  std::vector<Notification> TakeNotifications();

 private:
  // Throws PgError for a result that is not a success (nullptr included).
  Rows Check(PGresult* res, std::string_view what);
  // A statement waiting to be sent: prepared (`name`) or unprepared text (`sql`).
  struct Queued {
    std::string sql;
    const char* name = nullptr;
    Params params;
  };
  // Sends queued_ in one pipeline (queued_ is empty after) and returns the last one's
  // result; throws the first failure.
  Rows RunQueued();
  std::vector<Rows> RunQueuedAll();  // every result, in order

  PGconn* conn_ = nullptr;
  std::vector<Queued> queued_;
  bool begin_queued_ = false;  // queued_ starts with a BEGIN not sent yet
};

}  // namespace sluice::pg
