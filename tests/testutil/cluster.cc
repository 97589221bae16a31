#include "tests/testutil/cluster.h"

#include <libpq-fe.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sluice::testing {

ClusterInstance::ClusterInstance(int index, ServerOptions options)
    : index_(index), options_(std::move(options)) {
  Start();
}

void ClusterInstance::Start() {
  process_ = std::make_unique<ServerProcess>(options_);
  last_port_ = process_->port();
  std::lock_guard<std::mutex> lock(mu_);
  port_ = last_port_;
  ++generation_;
}

std::pair<int, int64_t> ClusterInstance::endpoint() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {port_, generation_};
}

pid_t ClusterInstance::pid() const { return process_ ? process_->pid() : -1; }

std::string ClusterInstance::ReadLog() const {
  std::ifstream in(options_.log_path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<httplib::Client> ClusterInstance::Client(const std::string& token) const {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port());
  c->set_tcp_nodelay(true);
  c->set_keep_alive(true);
  c->set_connection_timeout(2, 0);
  c->set_read_timeout(60, 0);
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  return c;
}

int ClusterInstance::Kill(int signo) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    port_ = 0;
    ++generation_;
  }
  if (!process_) return 0;
  const int status = process_->Stop(signo);
  process_.reset();
  return status;
}

void ClusterInstance::Restart(bool new_port) {
  if (process_) Kill(SIGKILL);
  options_.port = new_port ? 0 : last_port_;
  Start();
}

double ClusterInstance::CpuSeconds() const {
  const pid_t p = pid();
  if (p <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(p) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces, in parentheses): state is
  // field 3, utime 14 and stime 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int n = 3; n <= 15 && fields >> field; ++n) {
    if (n == 14) utime = std::stoull(field);
    if (n == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

Cluster::Cluster(ClusterOptions options)
    : options_(std::move(options)), pg_(options_.pg ? options_.pg : &PgServer::Shared()) {
  db_uri_ = pg_->CreateDatabase();
  for (int i = 0; i < options_.instances; ++i) {
    ServerOptions so;
    so.admin_token = options_.admin_token;
    so.db_path = db_uri_;
    so.extra_args = options_.extra_args;
    so.log_path = dir_.File("sluiced-" + std::to_string(i) + ".log");
    for (const auto& [index, env] : options_.env) {
      if (index == i) so.env = env;
    }
    for (const auto& [index, prefix] : options_.command_prefix) {
      if (index == i) so.command_prefix = prefix;
    }
    instances_.push_back(std::make_unique<ClusterInstance>(i, std::move(so)));
  }
}

Cluster::~Cluster() {
  for (auto& instance : instances_) instance->Kill(SIGTERM);
  if (conn_) PQfinish(static_cast<PGconn*>(conn_));
}

PgRows Cluster::Query(const std::string& sql, const std::vector<std::string>& params) const {
  std::lock_guard<std::mutex> lock(query_mu_);
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  std::unique_ptr<PGresult, decltype(&PQclear)> res(nullptr, &PQclear);
  // A second try on a new connection when the kept one is gone (the server restarted).
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!conn_ || PQstatus(static_cast<PGconn*>(conn_)) != CONNECTION_OK) {
      if (conn_) PQfinish(static_cast<PGconn*>(conn_));
      conn_ = PQconnectdb(db_uri_.c_str());
      if (PQstatus(static_cast<PGconn*>(conn_)) != CONNECTION_OK) {
        const std::string message = PQerrorMessage(static_cast<PGconn*>(conn_));
        PQfinish(static_cast<PGconn*>(conn_));
        conn_ = nullptr;
        throw std::runtime_error("Cluster: cannot connect to " + db_uri_ + ": " + message);
      }
    }
    PGconn* conn = static_cast<PGconn*>(conn_);
    res.reset(PQexecParams(conn, sql.c_str(), static_cast<int>(values.size()), nullptr,
                           values.data(), nullptr, nullptr, 0));
    const auto status = PQresultStatus(res.get());
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) break;
    if (attempt == 0 && PQstatus(conn) != CONNECTION_OK) continue;
    throw std::runtime_error("Cluster: " + sql + ": " + PQerrorMessage(conn));
  }
  PgRows rows;
  for (int r = 0; r < PQntuples(res.get()); ++r) {
    std::vector<std::optional<std::string>> row;
    for (int c = 0; c < PQnfields(res.get()); ++c) {
      if (PQgetisnull(res.get(), r, c)) {
        row.emplace_back(std::nullopt);
      } else {
        row.emplace_back(PQgetvalue(res.get(), r, c));
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int64_t Cluster::QueryInt(const std::string& sql, const std::vector<std::string>& params) const {
  PgRows rows = Query(sql, params);
  if (rows.empty() || rows[0].empty() || !rows[0][0]) {
    throw std::runtime_error("Cluster: no value from " + sql);
  }
  return std::stoll(*rows[0][0]);
}

nlohmann::json Cluster::Admin(int i, const std::string& method, const std::string& path,
                              const nlohmann::json& body) {
  auto c = (*this)[i].Client();
  HttpResult r = Call(*c, method, path, body, Bearer(admin_token()));
  if (r.status < 200 || r.status >= 300) {
    throw std::runtime_error("Cluster: " + method + " " + path + " answered " +
                             std::to_string(r.status) + ": " + r.body.dump());
  }
  return r.body;
}

std::string Cluster::CreateToken(const std::vector<std::string>& scopes,
                                 const std::string& tenant) {
  nlohmann::json body = {{"scopes", scopes}};
  if (!tenant.empty()) body["tenant"] = tenant;
  return Admin(0, "POST", "/v1/admin/tokens", body)["token"].get<std::string>();
}

}  // namespace sluice::testing
