#include "store/postgres/pg.h"

#include <charconv>

namespace sluice::pg {

std::string ArrayLiteral(const std::vector<std::optional<std::string>>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    if (!values[i]) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (char c : *values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

namespace {

// libpq's messages end in a newline (or two); one line reads better in a log.
std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

void IgnoreNotice(void*, const char*) {}

// Text-format parameter pointers for libpq (nullptr = NULL).
std::vector<const char*> Pointers(const Params& params) {
  std::vector<const char*> out;
  out.reserve(params.values().size());
  for (const auto& v : params.values()) out.push_back(v ? v->c_str() : nullptr);
  return out;
}

}  // namespace

int64_t Rows::affected() const {
  const char* n = PQcmdTuples(res_.get());
  if (!n || !*n) return 0;
  int64_t v = 0;
  std::from_chars(n, n + std::char_traits<char>::length(n), v);
  return v;
}

std::string Rows::Text(int row, int col) const {
  return std::string(PQgetvalue(res_.get(), row, col),
                     static_cast<size_t>(PQgetlength(res_.get(), row, col)));
}

int64_t Rows::Int(int row, int col) const {
  const char* v = PQgetvalue(res_.get(), row, col);
  const char* end = v + PQgetlength(res_.get(), row, col);
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || ptr != end) {
    throw PgError(
        "", "column " + std::to_string(col) + " is not an integer: '" + std::string(v, end) + "'");
  }
  return out;
}

bool Rows::Bool(int row, int col) const {
  const char* v = PQgetvalue(res_.get(), row, col);
  return v[0] == 't';
}

std::optional<int64_t> Rows::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

std::optional<std::string> Rows::OptText(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Text(row, col);
}

Connection::Connection(const std::string& uri) {
  // Later keywords override earlier ones: the URI's own settings win over these defaults.
  // A server that stops answering (a crash, a lost network) is noticed within about
  // half a minute rather than the kernel's TCP timeouts of many minutes.
  const char* keywords[] = {"connect_timeout",
                            "keepalives_idle",
                            "keepalives_interval",
                            "keepalives_count",
                            "tcp_user_timeout",
                            "fallback_application_name",
                            "dbname",
                            nullptr};
  const char* values[] = {"10", "10", "5", "3", "30000", "sluiced", uri.c_str(), nullptr};
  conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (!conn_) throw PgError("", "cannot connect: out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = OneLine(PQerrorMessage(conn_));
    PQfinish(conn_);
    conn_ = nullptr;
    throw PgError("", "cannot connect: " + msg);
  }
  PQsetNoticeProcessor(conn_, &IgnoreNotice, nullptr);
  try {
    Exec("SET synchronous_commit = on");
  } catch (...) {
    PQfinish(conn_);
    conn_ = nullptr;
    throw;
  }
}

Connection::~Connection() {
  if (conn_) PQfinish(conn_);
}

bool Connection::InTransaction() const {
  if (begin_queued_) return true;
  PGTransactionStatusType s = PQtransactionStatus(conn_);
  return s == PQTRANS_INTRANS || s == PQTRANS_INERROR || s == PQTRANS_ACTIVE;
}

Rows Connection::Check(PGresult* res, std::string_view what) {
  if (!res) {
    throw PgError("", std::string(what) + ": " + OneLine(PQerrorMessage(conn_)));
  }
  Rows rows(res);
  ExecStatusType status = PQresultStatus(res);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return rows;
  const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  const char* msg = PQresultErrorMessage(res);
  std::string text = msg && *msg ? msg : PQerrorMessage(conn_);
  if (text.empty()) text = PQresStatus(status);
  throw PgError(state ? state : "", std::string(what) + ": " + OneLine(text));
}

void Connection::Prepare(const std::string& name, const std::string& sql) {
  Check(PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr), "prepare " + name);
}

void Connection::BeginLazily(std::string begin) {
  queued_.clear();
  queued_.push_back(Queued{std::move(begin), nullptr, {}});
  begin_queued_ = true;
}

void Connection::Defer(const char* name, Params params) {
  queued_.push_back(Queued{"", name, std::move(params)});
}

void Connection::DeferSql(std::string sql) {
  queued_.push_back(Queued{std::move(sql), nullptr, {}});
}

Rows Connection::RunQueued() {
  std::vector<Rows> all = RunQueuedAll();
  return std::move(all.back());
}

std::vector<Rows> Connection::RunQueuedAll() {
  std::vector<Queued> batch = std::move(queued_);
  queued_.clear();
  begin_queued_ = false;
  auto send = [this](const Queued& q) {
    if (!q.name) {
      return PQsendQueryParams(conn_, q.sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0);
    }
    std::vector<const char*> values = Pointers(q.params);
    return PQsendQueryPrepared(conn_, q.name, static_cast<int>(values.size()), values.data(),
                               nullptr, nullptr, 0);
  };
  auto what = [](const Queued& q) { return q.name ? std::string(q.name) : q.sql; };
  std::vector<Rows> out;
  if (batch.size() == 1) {
    const Queued& q = batch.front();
    if (!q.name) {
      out.push_back(Check(PQexec(conn_, q.sql.c_str()), what(q)));
      return out;
    }
    std::vector<const char*> values = Pointers(q.params);
    out.push_back(Check(PQexecPrepared(conn_, q.name, static_cast<int>(values.size()),
                                       values.data(), nullptr, nullptr, 0),
                        what(q)));
    return out;
  }
  if (PQenterPipelineMode(conn_) != 1) {
    throw PgError("", "pipeline: " + OneLine(PQerrorMessage(conn_)));
  }
  bool sent = true;
  for (const Queued& q : batch) sent = sent && send(q) == 1;
  sent = sent && PQpipelineSync(conn_) == 1;
  // Each statement's result, then a null; then the sync. Everything is read to the sync
  // whatever happened, so that the connection leaves pipeline mode in step with the
  // server (after a failure the server skips the rest: PGRES_PIPELINE_ABORTED).
  std::vector<std::unique_ptr<PGresult, decltype(&PQclear)>> results;
  bool synced = false;
  if (sent) {
    for (size_t k = 0; k < batch.size(); ++k) {
      results.emplace_back(nullptr, &PQclear);
      while (PGresult* res = PQgetResult(conn_)) {
        if (!results.back()) {
          results.back().reset(res);
        } else {
          PQclear(res);
        }
      }
    }
    while (PGresult* res = PQgetResult(conn_)) {
      synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
      PQclear(res);
      if (synced) break;
    }
  }
  if (!sent || !synced || PQexitPipelineMode(conn_) != 1) {
    throw PgError(
        "", "pipeline ending in " + what(batch.back()) + ": " + OneLine(PQerrorMessage(conn_)));
  }
  for (size_t k = 0; k < batch.size(); ++k) {
    out.push_back(Check(results[k].release(), what(batch[k])));
  }
  return out;
}

std::vector<Rows> Connection::ExecPreparedAll(
    std::vector<std::pair<const char*, Params>> statements) {
  const size_t before = queued_.size();
  for (auto& [name, params] : statements) queued_.push_back(Queued{"", name, std::move(params)});
  std::vector<Rows> all = RunQueuedAll();
  return std::vector<Rows>(
      std::make_move_iterator(all.begin() + static_cast<std::ptrdiff_t>(before)),
      std::make_move_iterator(all.end()));
}

Rows Connection::ExecPrepared(const char* name, const Params& params) {
  if (!queued_.empty()) {
    queued_.push_back(Queued{"", name, params});
    return RunQueued();
  }
  std::vector<const char*> values = Pointers(params);
  return Check(PQexecPrepared(conn_, name, static_cast<int>(values.size()), values.data(), nullptr,
                              nullptr, 0),
               name);
}

Rows Connection::ExecParams(const std::string& sql, const Params& params) {
  if (!queued_.empty()) RunQueued();
  std::vector<const char*> values = Pointers(params);
  return Check(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, 0),
               sql.substr(0, 60));
}

Rows Connection::Exec(const std::string& sql) {
  const bool ending = sql == "COMMIT" || sql == "ROLLBACK";
  if (ending && (begin_queued_ && (queued_.size() == 1 || sql == "ROLLBACK"))) {
    // The transaction was never sent (or only writes ROLLBACK drops): nothing to end.
    queued_.clear();
    begin_queued_ = false;
    return Rows(PQmakeEmptyPGresult(conn_, PGRES_COMMAND_OK));
  }
  if (sql == "ROLLBACK") queued_.clear();
  if (sql == "COMMIT" && !queued_.empty()) {
    queued_.push_back(Queued{sql, nullptr, {}});
    return RunQueued();
  }
  if (!queued_.empty()) RunQueued();
  return Check(PQexec(conn_, sql.c_str()), sql.substr(0, 60));
}

std::vector<Connection::Notification> Connection::TakeNotifications() {
  if (PQconsumeInput(conn_) == 0) {
    throw PgError("", "connection lost: " + OneLine(PQerrorMessage(conn_)));
  }
  std::vector<Notification> out;
  while (PGnotify* n = PQnotifies(conn_)) {
    out.push_back(Notification{n->be_pid, n->relname, n->extra});
    PQfreemem(n);
  }
  return out;
}

}  // namespace sluice::pg
