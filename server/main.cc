// sluiced: the sluice server. Wires the store, the dispatcher and the HTTP routes,
// and drains gracefully on SIGINT/SIGTERM. `sluiced copy-db` moves a SQLite database
// to PostgreSQL (store/copy/sqlite_to_postgres.h).
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "common/random.h"
#include "server/app.h"
#include "server/asio.h"
#include "server/auth_failures.h"
#include "server/client_ip.h"
#include "server/config.h"
#include "server/dispatcher.h"
#include "server/errors.h"
#include "server/http_server.h"
#include "server/layer_gate.h"
#include "server/log.h"
#include "server/maintenance.h"
#include "server/metrics.h"
#include "server/request_reader.h"
#include "store/copy/sqlite_to_postgres.h"
#include "store/db_uri.h"
#include "store/postgres/pg_store.h"
#include "store/sqlite/sqlite_store.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:8080";
  std::string db = "./sluice.db";
  std::string config;
  std::string port_file;
  std::string synchronous = "FULL";
  int db_pool = 8;
  int io_threads = 2;
  int http_threads = 16;
  int64_t max_body_bytes = 1 << 20;
  int64_t max_wait_ms = 30000;
  int64_t lookahead_us = 30000;
  int64_t recheck_ms = -1;  // -1: 1000 on PostgreSQL, 0 (never) on SQLite
  int64_t retention_hours = 168;
  std::string log_format = "text";
  bool access_log = true;
  size_t metrics_max_tenants = 100;
  int64_t max_connections = 0;               // 0: derived from the file-descriptor limit
  std::vector<std::string> trusted_proxies;  // CIDR blocks (server/client_ip.h)
  std::string forwarded_header = "x-forwarded-for";
  int64_t auth_failure_limit = 20;  // per client address and window; 0: off
  int64_t auth_failure_window_s = 60;
};

// Raises the soft limit on open files to the hard one (as servers do) and returns it.
int64_t RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  return lim.rlim_cur == RLIM_INFINITY ? (int64_t{1} << 20) : static_cast<int64_t>(lim.rlim_cur);
}

// File descriptors kept for everything but connections: the database and its WAL,
// the log, the listening socket, the spare descriptor of the accept loop, epoll...
constexpr int64_t kReservedDescriptors = 64;

std::string AdminTokenFromEnv() {
  if (const char* t = std::getenv("SLUICE_ADMIN_TOKEN"); t && *t) return t;
  if (const char* f = std::getenv("SLUICE_ADMIN_TOKEN_FILE"); f && *f) {
    std::ifstream in(f);
    std::string token;
    std::getline(in, token);
    return token;
  }
  return "";
}

sluice::Result<std::unique_ptr<sluice::Store>> OpenStore(const Flags& flags,
                                                         sluice::Metrics& metrics,
                                                         boost::asio::io_context& http_io) {
  if (sluice::IsPostgresUri(flags.db)) {
    sluice::PgStoreOptions options;
    options.uri = flags.db;
    options.pool = flags.db_pool;
    auto opened = sluice::PgStore::Open(options);
    if (!opened.ok()) return opened.error();
    return std::unique_ptr<sluice::Store>(std::move(opened.value()));
  }
  sluice::SqliteStoreOptions options;
  options.path = flags.db;
  options.synchronous = flags.synchronous;
  options.on_commit = [&metrics](double seconds, size_t ops, bool flushed) {
    metrics.ObserveCommit(seconds, ops, flushed);
  };
  options.on_flush = [&metrics](double seconds) { metrics.ObserveFlush(seconds); };
  options.completions = [&http_io](std::function<void()> fn) {
    boost::asio::post(http_io, std::move(fn));
  };
  auto opened = sluice::SqliteStore::Open(options);
  if (!opened.ok()) return opened.error();
  return std::unique_ptr<sluice::Store>(std::move(opened.value()));
}

// `sluiced copy-db --from FILE --to URI`: the counts on stdout, a refusal on stderr.
int CopyDb(const std::string& from, const std::string& to) {
  if (!sluice::IsPostgresUri(to)) {
    std::cerr << "sluiced copy-db: --to must be a PostgreSQL URI (postgres://...), got '" << to
              << "'\n";
    return 2;
  }
  sluice::CopyDbOptions options;
  options.sqlite_path = from;
  options.pg_uri = to;
  auto copied = sluice::CopySqliteToPostgres(options);
  if (!copied.ok()) {
    std::cerr << "sluiced copy-db: " << copied.error().detail << "\n";
    return 1;
  }
  const sluice::CopyDbReport& report = copied.value();
  std::cout << "copied " << from << " (schema version " << report.sqlite_version << ") to "
            << sluice::RedactDb(to) << " (schema version " << report.postgres_version << "):\n";
  for (const sluice::CopiedTable& t : report.tables) {
    std::cout << "  " << t.table << " " << t.rows << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit must make writes fail (EFBIG -> storage_unavailable), not kill us.
  std::signal(SIGXFSZ, SIG_IGN);
  Flags flags;
  CLI::App cli{"sluiced: a traffic-shaping job queue server"};
  cli.add_option("--listen", flags.listen, "host:port to listen on (port 0 picks a free one)");
  cli.add_option("--db", flags.db,
                 "SQLite database file (created if missing), or a PostgreSQL connection URI "
                 "(postgres://user@host:port/dbname)");
  cli.add_option("--db-pool", flags.db_pool,
                 "PostgreSQL: connections to the database (each with its own driver thread)")
      ->check(CLI::Range(1, 256));
  cli.add_option("--config", flags.config, "JSON config declaring queues");
  cli.add_option("--port-file", flags.port_file, "write the bound port here once listening");
  cli.add_option("--synchronous", flags.synchronous, "SQLite synchronous level: FULL or NORMAL")
      ->check(CLI::IsMember({"FULL", "NORMAL"}));
  cli.add_option("--io-threads", flags.io_threads,
                 "threads serving connections, intake, leases and acks")
      ->check(CLI::Range(1, 64));
  cli.add_option("--http-threads", flags.http_threads,
                 "threads for blocking requests (admin, reads); long-polls hold none")
      ->check(CLI::Range(1, 1024));
  cli.add_option("--max-body-bytes", flags.max_body_bytes, "largest request body accepted");
  cli.add_option("--max-wait-ms", flags.max_wait_ms, "longest long-poll a worker may ask for");
  cli.add_option("--recheck-ms", flags.recheck_ms,
                 "With other instances on the database: parked long-polls look again this "
                 "often, should a change another instance announced be missed (0: never; "
                 "default 1000 on PostgreSQL)")
      ->check(CLI::Range(int64_t{-1}, int64_t{3600000}));
  cli.add_option("--release-lookahead-us", flags.lookahead_us,
                 "commit releases due this soon ahead of time, hand them out on time")
      ->check(CLI::Range(0, 100000));
  cli.add_option("--retention-hours", flags.retention_hours,
                 "how long finished jobs (and idempotency keys) are kept")
      ->check(CLI::Range(0, 24 * 3650));
  cli.add_option("--log-format", flags.log_format, "log lines as text (logfmt) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cli.add_flag("--access-log,!--no-access-log", flags.access_log,
               "one log line per request (default on)");
  cli.add_option("--metrics-max-tenants", flags.metrics_max_tenants,
                 "tenant label values per metric; the rest are counted as tenant=\"other\"")
      ->check(CLI::Range(1, 100000));
  cli.add_option("--max-connections", flags.max_connections,
                 "open connections served at once; more are answered 503 and closed "
                 "(default: the open-file limit less 64, at most 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cli.add_option("--trusted-proxy", flags.trusted_proxies,
                 "a proxy (CIDR block or address; repeatable) whose forwarding header names "
                 "the client; other peers are the client themselves")
      ->check([](const std::string& s) {
        return sluice::ParseCidr(s) ? std::string() : "not a CIDR block or an address: " + s;
      });
  cli.add_option("--auth-failure-limit", flags.auth_failure_limit,
                 "failed authentications a client address may make per window before every "
                 "request from it is answered 429 until the window ends (0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  cli.add_option("--auth-failure-window-s", flags.auth_failure_window_s,
                 "the window of --auth-failure-limit, in seconds")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  cli.add_option("--forwarded-header", flags.forwarded_header,
                 "the header trusted proxies set: x-forwarded-for or forwarded (RFC 7239)")
      ->check(CLI::IsMember({"x-forwarded-for", "forwarded"}));
  std::string copy_from;
  std::string copy_to;
  CLI::App* copy_db = cli.add_subcommand(
      "copy-db",
      "copy a SQLite database (no sluiced running on it) into an empty PostgreSQL database, "
      "in one transaction; see docs/operations.md");
  copy_db->add_option("--from", copy_from, "the SQLite database file")->required();
  copy_db->add_option("--to", copy_to, "the PostgreSQL database: postgres://user@host:port/db")
      ->required();
  CLI11_PARSE(cli, argc, argv);
  if (*copy_db) return CopyDb(copy_from, copy_to);
  sluice::ConfigureLogging(
      flags.log_format == "json" ? sluice::LogFormat::kJson : sluice::LogFormat::kText,
      sluice::RandomId("", 6));
  sluice::Metrics metrics(flags.metrics_max_tenants);
  const int64_t open_files = RaiseOpenFileLimit();
  const int64_t derived_connections =
      std::clamp<int64_t>(open_files - kReservedDescriptors, 16, 10000);
  if (flags.max_connections > open_files - kReservedDescriptors) {
    sluice::LogEvent(spdlog::level::warn, "max_connections_above_fd_limit",
                     {{"max_connections", flags.max_connections},
                      {"open_file_limit", open_files},
                      {"detail", "connections beyond the descriptor limit are answered 503"}});
  }

  size_t colon = flags.listen.rfind(':');
  if (colon == std::string::npos) {
    sluice::LogEvent(spdlog::level::err, "bad_flag",
                     {{"detail", "--listen must be host:port, got '" + flags.listen + "'"}});
    return 2;
  }
  const std::string host = flags.listen.substr(0, colon);
  const int port = std::atoi(flags.listen.c_str() + colon + 1);

  // Connections, intake, leases and acks run here; declared before the store, whose
  // group commits deliver their completions to it, so that it outlives the store.
  boost::asio::io_context http_io(flags.io_threads);
  auto opened = OpenStore(flags, metrics, http_io);
  if (!opened.ok()) {
    sluice::LogEvent(spdlog::level::err, "storage_open_failed",
                     {{"detail", opened.error().detail}});
    spdlog::shutdown();
    return 1;
  }
  std::unique_ptr<sluice::Store> store = std::move(opened.value());
  sluice::SystemClock clock;

  if (!flags.config.empty()) {
    auto config = sluice::LoadConfig(flags.config);
    if (!config.ok()) {
      sluice::LogEvent(spdlog::level::err, "config_invalid", {{"detail", config.error().detail}});
      spdlog::shutdown();
      return 2;
    }
    auto applied = sluice::ApplyConfig(config.value(), *store, clock.Now());
    if (!applied.ok()) {
      sluice::LogEvent(spdlog::level::err, "config_not_applied",
                       {{"detail", applied.error().detail}});
      spdlog::shutdown();
      return 1;
    }
    for (const std::string& warning : applied.value().warnings) {
      sluice::LogEvent(spdlog::level::warn, "config_not_followed",
                       {{"config", flags.config}, {"detail", warning}});
    }
    for (const std::string& key : applied.value().released) {
      // A warning: an operator should notice that the file let go of something (taken
      // out of the file by mistake, say).
      sluice::LogEvent(spdlog::level::warn, "config_released",
                       {{"config", flags.config},
                        {"managed", key},
                        {"detail",
                         "no longer declared in the file: managed through the API "
                         "from now on"}});
    }
    sluice::LogEvent(spdlog::level::info, "config_applied",
                     {{"config", flags.config},
                      {"queues", config.value().queues.size()},
                      {"written", applied.value().written}});
  }

  const std::string admin_token = AdminTokenFromEnv();
  if (admin_token.empty()) {
    sluice::LogEvent(spdlog::level::warn, "admin_disabled",
                     {{"detail", "SLUICE_ADMIN_TOKEN is not set: the admin API is disabled"}});
  }
  sluice::Authenticator auth(*store, admin_token);

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  sluice::Dispatcher dispatcher(
      io, *store, clock, flags.lookahead_us, [&metrics](sluice::Micros lag) {
        metrics.ObserveReleaseLag(static_cast<double>(lag) / sluice::kMicrosPerSecond);
      });
  // The intake-protection layers in force: the declared ones (the config file's were
  // stored above), else the defaults.
  sluice::LayerGate layers(*store, auth, clock, metrics);
  if (sluice::Status loaded = layers.Load(); !loaded.ok()) {
    sluice::LogEvent(spdlog::level::err, "limits_not_loaded", {{"detail", loaded.error().detail}});
    spdlog::shutdown();
    return 1;
  }
  {
    auto p = layers.policy();
    sluice::LogEvent(spdlog::level::info, "limits_in_force",
                     {{"policy_version", p->version},
                      {"defaults", p->version == 0},
                      {"layers", sluice::LayersToJson(p->layers)["layers"]}});
  }
  sluice::App app{*store, auth, dispatcher, clock, metrics, flags.max_wait_ms, &layers};
  // Other instances on the same database: their changes wake the long-polls here, and a
  // re-check bounds the wait should one be missed (a lost channel). One process per
  // SQLite file hears nothing and needs no re-check.
  store->OnChange([&dispatcher, &layers](sluice::StoreChange change) {
    if (change == sluice::StoreChange::kTokens) return;  // the store dropped its cache
    if (change == sluice::StoreChange::kLimits) return layers.MarkStale();
    if (change == sluice::StoreChange::kResync) layers.MarkStale();
    if (change == sluice::StoreChange::kLeaseEnded) return dispatcher.NotifyLeaseEnded();
    dispatcher.Notify();
  });
  const int64_t recheck_ms =
      flags.recheck_ms >= 0 ? flags.recheck_ms : (sluice::IsPostgresUri(flags.db) ? 1000 : 0);
  dispatcher.RecheckEvery(std::chrono::milliseconds(recheck_ms));

  sluice::LeaseReaper reaper(*store);
  sluice::DeadlineExpirer expirer(*store);
  sluice::Cleaner cleaner(*store, flags.retention_hours * 3600 * sluice::kMicrosPerSecond);
  sluice::MaintenanceLoop maintenance(io, clock, [&](const sluice::MaintenanceCounts& c) {
    if (c.leases_requeued > 0) dispatcher.Notify();  // requeued jobs may go out now
  });
  using std::chrono::milliseconds;
  // On one instance at a time (the store says which); another takes over when it goes.
  auto leader_only = [&store](auto& service) {
    return [&store, &service](sluice::Micros now) -> sluice::Result<sluice::MaintenanceCounts> {
      if (!store->MaintenanceLeader()) return sluice::MaintenanceCounts{};
      return service.RunOnce(now);
    };
  };
  maintenance.Every(milliseconds(250), leader_only(reaper));
  maintenance.Every(milliseconds(250), leader_only(expirer));
  maintenance.Every(milliseconds(60000), leader_only(cleaner));

  sluice::Router router;
  sluice::RegisterRoutes(router, app);
  sluice::HttpServerOptions http_options;
  http_options.io_threads = flags.io_threads;
  http_options.handler_threads = flags.http_threads;
  http_options.max_body_bytes = static_cast<size_t>(flags.max_body_bytes);
  http_options.max_connections =
      static_cast<size_t>(flags.max_connections > 0 ? flags.max_connections : derived_connections);
  {
    std::vector<sluice::Cidr> blocks;
    for (const std::string& s : flags.trusted_proxies) blocks.push_back(*sluice::ParseCidr(s));
    http_options.trusted_proxies =
        sluice::TrustedProxies(std::move(blocks), flags.forwarded_header == "forwarded"
                                                      ? sluice::ForwardedHeader::kForwarded
                                                      : sluice::ForwardedHeader::kXForwardedFor);
  }
  sluice::AuthFailureGuard auth_failures(*store, clock, flags.auth_failure_limit,
                                         flags.auth_failure_window_s * sluice::kMicrosPerSecond);
  if (auth_failures.enabled()) {
    http_options.admit = [&auth_failures](const sluice::HttpRequest& req) {
      return auth_failures.Check(req);
    };
  }
  http_options.gate = [&layers](const sluice::HttpRequest& req, sluice::RouteGroup group,
                                std::function<void(sluice::GateResult)> later) {
    return layers.Admit(req, group, std::move(later));
  };
  sluice::HttpServer server(
      http_io, http_options, std::move(router),
      [](const sluice::Error& e, sluice::HttpResponse& res) { sluice::RenderError(res, e); },
      [&metrics, &auth_failures, access_log = flags.access_log](
          const sluice::HttpRequest& req, const std::string& route, int status, double seconds) {
        if (status == 401) auth_failures.OnFailure(req);
        metrics.ObserveRequest(sluice::MethodLabel(req.method), route.empty() ? "unmatched" : route,
                               status, seconds);
        if (access_log) {
          sluice::LogRequest(req.request_id, req.method, req.path, status,
                             std::round(seconds * 1e6) / 1e3, req.remote_addr, req.client_ip);
        }
      });
  auto bound = server.Listen(host, port);
  if (!bound.ok()) {
    sluice::LogEvent(spdlog::level::err, "listen_failed", {{"detail", bound.error().detail}});
    spdlog::shutdown();
    return 1;
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    sluice::LogEvent(spdlog::level::info, "draining", {{"signal", signo}});
    dispatcher.Shutdown();  // answers waiting long-polls
    server.Stop();
  });
  std::thread io_thread([&] { io.run(); });

  sluice::LogEvent(spdlog::level::info, "listening",
                   {{"address", host + ":" + std::to_string(bound.value())},
                    {"db", sluice::RedactDb(flags.db)},
                    {"max_connections", http_options.max_connections},
                    {"synchronous", flags.synchronous}});
  if (!flags.port_file.empty()) {
    std::string tmp = flags.port_file + ".tmp";
    std::ofstream(tmp) << bound.value() << "\n";
    std::rename(tmp.c_str(), flags.port_file.c_str());
  }
  server.Run();

  work.reset();
  io.stop();
  io_thread.join();
  store->OnChange(nullptr);  // the dispatcher goes before the store
  sluice::LogEvent(spdlog::level::info, "stopped", nlohmann::json::object());
  spdlog::shutdown();  // flushes the buffered log
  return 0;
}
