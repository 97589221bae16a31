#include "tests/testutil/pg_server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/testutil/subprocess.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr const char* kDefaultBindir = "/usr/lib/postgresql/15/bin";
constexpr int kStartAttempts = 5;  // each on a fresh port, should another process take it

std::string Tail(const std::string& path, size_t max_chars = 3000) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  return text.size() > max_chars ? text.substr(text.size() - max_chars) : text;
}

// Polls PQping with a growing back-off (2 ms .. 100 ms) until the server accepts
// connections or `timeout` passes.
bool AwaitAccepting(const std::string& uri, milliseconds timeout) {
  const auto deadline = steady_clock::now() + timeout;
  milliseconds pause(2);
  while (true) {
    if (PQping(uri.c_str()) == PQPING_OK) return true;
    if (steady_clock::now() + pause >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(100));
  }
}

// Runs one statement on a fresh connection; throws with the server's message on failure.
void Execute(const std::string& uri, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(uri.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    throw std::runtime_error("PgServer: cannot connect to " + uri + ": " +
                             PQerrorMessage(conn.get()));
  }
  std::unique_ptr<PGresult, decltype(&PQclear)> res(PQexec(conn.get(), sql.c_str()), &PQclear);
  if (PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
    throw std::runtime_error("PgServer: " + sql + ": " + PQerrorMessage(conn.get()));
  }
}

// A name no other test process (on a shared SLUICE_TEST_PG_URI server) picks.
std::string DatabaseName(int n) {
  static const unsigned tag = std::random_device{}() & 0xffffff;
  char buf[64];
  snprintf(buf, sizeof(buf), "sluice_test_%d_%06x_%d", static_cast<int>(getpid()), tag, n);
  return buf;
}

}  // namespace

PgServer::PgServer() {
  const char* env_bindir = std::getenv("SLUICE_TEST_PG_BINDIR");
  bindir_ = env_bindir && *env_bindir ? env_bindir : kDefaultBindir;
  for (const char* tool : {"initdb", "pg_ctl", "postgres"}) {
    if (access((bindir_ + "/" + tool).c_str(), X_OK) != 0) {
      throw std::runtime_error("PgServer: no " + bindir_ + "/" + tool +
                               ": install PostgreSQL 15 (scripts/setup.sh installs "
                               "postgresql and libpq-dev) or set SLUICE_TEST_PG_BINDIR");
    }
  }
  dir_.emplace("/tmp", "sluice-pg");  // mode 0700; /tmp itself is traversable by postgres
  if (geteuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (!pw) {
      throw std::runtime_error(
          "PgServer: running as root but there is no `postgres` user to run the server "
          "as: install the postgresql package (scripts/setup.sh)");
    }
    if (chown(dir_->path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
      throw std::runtime_error("PgServer: cannot chown " + dir_->path() + " to postgres");
    }
  }
  if (RunAsPostgres({bindir_ + "/initdb", "-D", dir_->File("data"), "-A", "trust", "-U", "postgres",
                     "--no-sync", "-E", "UTF8", "--locale=C"}) != 0) {
    throw std::runtime_error("PgServer: initdb failed:\n" + ReadLogs());
  }
  for (int attempt = 0; attempt < kStartAttempts && !running_; ++attempt) {
    running_ = StartOn(FreeLoopbackPort());
  }
  if (!running_) throw std::runtime_error("PgServer: the server did not start:\n" + ReadLogs());
}

PgServer::PgServer(External, std::string base_uri) : base_uri_(std::move(base_uri)) {
  port_ = 5432;
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(base_uri_.c_str(), &err);
  if (!options) {
    std::string detail = err ? err : "out of memory";
    PQfreemem(err);
    throw std::runtime_error("PgServer: SLUICE_TEST_PG_URI=" + base_uri_ + ": " + detail);
  }
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (std::string(o->keyword) == "port" && o->val && *o->val) port_ = std::atoi(o->val);
  }
  PQconninfoFree(options);
  running_ = true;
}

PgServer::~PgServer() {
  if (!base_uri_.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& name : created_) {
      try {
        Execute(base_uri_, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
      } catch (const std::exception&) {  // best effort: the server may be gone
      }
    }
    return;
  }
  try {
    Stop();
  } catch (const std::exception&) {  // cannot spawn pg_ctl: nothing more to do here
  }
  // dir_ (data, socket, logs) is removed after this body.
}

PgServer& PgServer::Shared() {
  struct Holder {
    std::unique_ptr<PgServer> server;
    std::string error;
  };
  // Initialized once, thread-safely; a failure is kept, so later calls fail fast.
  static Holder holder = [] {
    Holder h;
    try {
      const char* uri = std::getenv("SLUICE_TEST_PG_URI");
      h.server.reset(uri && *uri ? new PgServer(External{}, uri) : new PgServer());
    } catch (const std::exception& e) {
      h.error = e.what();
    }
    return h;
  }();
  if (!holder.server) throw std::runtime_error(holder.error);
  return *holder.server;
}

std::string PgServer::uri(const std::string& dbname) const {
  if (base_uri_.empty()) {
    return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + dbname;
  }
  // scheme://authority[/dbname][?params]: replace the dbname, keep the rest.
  size_t authority = base_uri_.find("://");
  authority = authority == std::string::npos ? 0 : authority + 3;
  size_t path = base_uri_.find_first_of("/?", authority);
  std::string head = base_uri_.substr(0, path);
  std::string query;
  if (path != std::string::npos) {
    size_t q = base_uri_.find('?', path);
    if (q != std::string::npos) query = base_uri_.substr(q);
  }
  return head + "/" + dbname + query;
}

std::string PgServer::CreateDatabase() {
  const std::string name = DatabaseName(next_database_++);
  Execute(base_uri_.empty() ? uri("postgres") : base_uri_,
          "CREATE DATABASE " + name + " TEMPLATE template0");
  if (!base_uri_.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    created_.push_back(name);
  }
  return uri(name);
}

void PgServer::Stop(bool immediate) {
  if (!base_uri_.empty()) throw std::logic_error("PgServer: SLUICE_TEST_PG_URI is not ours");
  if (!running_) return;
  const std::string data = dir_->File("data");
  if (immediate ||
      RunAsPostgres({bindir_ + "/pg_ctl", "stop", "-D", data, "-m", "fast", "-w"}) != 0) {
    RunAsPostgres({bindir_ + "/pg_ctl", "stop", "-D", data, "-m", "immediate", "-w"});
  }
  running_ = false;
}

void PgServer::Start() {
  if (!base_uri_.empty()) throw std::logic_error("PgServer: SLUICE_TEST_PG_URI is not ours");
  if (running_) return;
  running_ = StartOn(port_);
  if (!running_) throw std::runtime_error("PgServer: the server did not restart:\n" + ReadLogs());
}

bool PgServer::StartOn(int port) {
  port_ = port;
  const std::string options = "-c listen_addresses=127.0.0.1 -p " + std::to_string(port) +
                              " -c unix_socket_directories=" + dir_->path() +
                              " -c fsync=on -c synchronous_commit=on -c max_connections=200";
  // -w: pg_ctl returns once the server is ready, or at once when it exits (port taken).
  if (RunAsPostgres({bindir_ + "/pg_ctl", "start", "-w", "-t", "60", "-D", dir_->File("data"), "-l",
                     dir_->File("server.log"), "-o", options}) != 0) {
    return false;
  }
  if (AwaitAccepting(uri("postgres"), milliseconds(30000))) return true;
  RunAsPostgres({bindir_ + "/pg_ctl", "stop", "-D", dir_->File("data"), "-m", "immediate"});
  return false;
}

// Runs a PostgreSQL tool in the server's directory, as `postgres` when we are root;
// its output goes to commands.log. Returns the exit status.
int PgServer::RunAsPostgres(std::vector<std::string> argv) {
  std::vector<std::string> full;
  if (geteuid() == 0) full = {"runuser", "-u", "postgres", "--"};
  // env -C: the tools warn when they cannot enter the caller's directory (e.g. /root).
  for (const std::string& a : {std::string("env"), std::string("-C"), dir_->path()}) {
    full.push_back(a);
  }
  full.insert(full.end(), argv.begin(), argv.end());
  Subprocess process(full, {"LC_ALL=C"}, dir_->File("commands.log"));
  return process.Wait(milliseconds(120000)).value_or(-1);
}

std::string PgServer::ReadLogs() const {
  return Tail(dir_->File("commands.log")) + Tail(dir_->File("server.log"));
}

}  // namespace sluice::testing
