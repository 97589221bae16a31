// sluiced: the sluice server. Wires the store, the dispatcher and the HTTP routes,
// and drains gracefully on SIGINT/SIGTERM.
#include <httplib.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "server/app.h"
#include "server/asio.h"
#include "server/config.h"
#include "server/dispatcher.h"
#include "server/maintenance.h"
#include "store/sqlite_store.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:8080";
  std::string db = "./sluice.db";
  std::string config;
  std::string port_file;
  std::string synchronous = "FULL";
  int http_threads = 64;
  int64_t max_body_bytes = 1 << 20;
  int64_t max_wait_ms = 30000;
  int64_t lookahead_us = 10000;
  int64_t retention_hours = 168;
};

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

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit must make writes fail (EFBIG -> storage_unavailable), not kill us.
  std::signal(SIGXFSZ, SIG_IGN);
  spdlog::set_default_logger(spdlog::stderr_color_mt("sluiced"));  // logs go to stderr
  Flags flags;
  CLI::App cli{"sluiced: a traffic-shaping job queue server"};
  cli.add_option("--listen", flags.listen, "host:port to listen on (port 0 picks a free one)");
  cli.add_option("--db", flags.db, "SQLite database file (created if missing)");
  cli.add_option("--config", flags.config, "JSON config declaring queues");
  cli.add_option("--port-file", flags.port_file, "write the bound port here once listening");
  cli.add_option("--synchronous", flags.synchronous, "SQLite synchronous level: FULL or NORMAL")
      ->check(CLI::IsMember({"FULL", "NORMAL"}));
  cli.add_option("--http-threads", flags.http_threads,
                 "HTTP worker threads; each waiting long-poll holds one")
      ->check(CLI::Range(4, 4096));
  cli.add_option("--max-body-bytes", flags.max_body_bytes, "largest request body accepted");
  cli.add_option("--max-wait-ms", flags.max_wait_ms, "longest long-poll a worker may ask for");
  cli.add_option("--release-lookahead-us", flags.lookahead_us,
                 "commit releases due this soon ahead of time, hand them out on time")
      ->check(CLI::Range(0, 100000));
  cli.add_option("--retention-hours", flags.retention_hours,
                 "how long finished jobs (and idempotency keys) are kept")
      ->check(CLI::Range(0, 24 * 3650));
  CLI11_PARSE(cli, argc, argv);

  size_t colon = flags.listen.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("--listen must be host:port, got '{}'", flags.listen);
    return 2;
  }
  const std::string host = flags.listen.substr(0, colon);
  const int port = std::atoi(flags.listen.c_str() + colon + 1);

  sluice::SqliteStoreOptions store_options;
  store_options.path = flags.db;
  store_options.synchronous = flags.synchronous;
  auto opened = sluice::SqliteStore::Open(store_options);
  if (!opened.ok()) {
    spdlog::error("{}", opened.error().detail);
    return 1;
  }
  std::unique_ptr<sluice::SqliteStore> store = std::move(opened.value());
  sluice::SystemClock clock;

  if (!flags.config.empty()) {
    auto config = sluice::LoadConfig(flags.config);
    if (!config.ok()) {
      spdlog::error("{}", config.error().detail);
      return 2;
    }
    auto applied = sluice::ApplyConfig(config.value(), *store, clock.Now());
    if (!applied.ok()) {
      spdlog::error("applying config: {}", applied.error().detail);
      return 1;
    }
    spdlog::info("config {}: {} queue(s) declared, {} written", flags.config,
                 config.value().queues.size(), applied.value());
  }

  const std::string admin_token = AdminTokenFromEnv();
  if (admin_token.empty()) {
    spdlog::warn("SLUICE_ADMIN_TOKEN is not set: the admin API is disabled");
  }
  sluice::Authenticator auth(*store, admin_token);

  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  sluice::Dispatcher dispatcher(io, *store, clock, flags.lookahead_us);
  sluice::App app{*store, auth, dispatcher, clock, flags.max_wait_ms};

  sluice::LeaseReaper reaper(*store);
  sluice::DeadlineExpirer expirer(*store);
  sluice::Cleaner cleaner(*store, flags.retention_hours * 3600 * sluice::kMicrosPerSecond);
  sluice::MaintenanceLoop maintenance(io, clock, [&](const sluice::MaintenanceCounts& c) {
    if (c.leases_requeued > 0) dispatcher.Notify();  // requeued jobs may go out now
  });
  using std::chrono::milliseconds;
  maintenance.Every(milliseconds(250), [&](sluice::Micros now) { return reaper.RunOnce(now); });
  maintenance.Every(milliseconds(250), [&](sluice::Micros now) { return expirer.RunOnce(now); });
  maintenance.Every(milliseconds(60000), [&](sluice::Micros now) { return cleaner.RunOnce(now); });

  httplib::Server server;
  server.new_task_queue = [n = flags.http_threads] { return new httplib::ThreadPool(n); };
  server.set_tcp_nodelay(true);  // NOTES.md pitfall 1
  server.set_keep_alive_max_count(100000);
  // An idle keep-alive connection delays shutdown by up to this long (httplib checks
  // for stop only between requests), so keep it short; busy clients never idle this long.
  server.set_keep_alive_timeout(5);
  server.set_read_timeout(60, 0);
  server.set_write_timeout(60, 0);
  server.set_payload_max_length(static_cast<size_t>(flags.max_body_bytes));
  sluice::RegisterRoutes(server, app);

  int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    spdlog::error("cannot listen on {}", flags.listen);
    return 1;
  }

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: draining", signo);
    dispatcher.Shutdown();  // answers waiting long-polls so their threads can finish
    server.stop();
  });
  std::thread io_thread([&] { io.run(); });

  spdlog::info("sluiced listening on {}:{} (db {}, synchronous={})", host, bound, flags.db,
               flags.synchronous);
  if (!flags.port_file.empty()) {
    std::string tmp = flags.port_file + ".tmp";
    std::ofstream(tmp) << bound << "\n";
    std::rename(tmp.c_str(), flags.port_file.c_str());
  }
  server.listen_after_bind();

  work.reset();
  io.stop();
  io_thread.join();
  spdlog::info("sluiced stopped");
  return 0;
}
