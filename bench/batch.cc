// Batch intake (issue 18): POST /v1/queues/{queue}/jobs:batch on a real sluiced (SQLite,
// --synchronous as given) beside the floor it is held to, a raw SQLite batched insert of
// the same rows into the same table (sluice's own schema and insert statement, WAL,
// the same synchronous level, one transaction per batch, no HTTP, no JSON, no
// decisions), and the simpler table of ../shared/peer-bench/sqlite_bench.c (an integer
// key, a 100-byte blob: the issue's ~396k rows/s). Rounds alternate (raw, then HTTP),
// each on fresh databases; prints each round and the medians of jobs/s and of the
// per-round ratios, as JSON on the last line.
//
// The HTTP side: C connections, each posting batches of B jobs for its own tenant over
// keep-alive until the round's jobs are in; every item must come back 202 (else the
// exit status is 1). sluiced's CPU per job is read from /proc over the round.
//
// Usage: sluice-bench-batch [--rounds 5] [--jobs 200000] [--batch 1000]
//          [--connections 2] [--synchronous FULL|NORMAL]
// bench/batch.sh builds it and runs it both ways.
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/proc_stats.h"
#include "common/random.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/testutil/server_process.h"
#include "tests/testutil/temp_dir.h"

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

using sluice::bench::CpuSeconds;

double Seconds(SteadyClock::time_point since) {
  return std::chrono::duration<double>(SteadyClock::now() - since).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

void Check(int rc, sqlite3* db, const char* what) {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return;
  std::fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
  std::exit(2);
}

// Opens `path` in WAL mode at `sync`, then runs `setup` (SQL, may be empty).
sqlite3* OpenRaw(const std::string& path, const std::string& sync, const std::string& setup) {
  sqlite3* db = nullptr;
  Check(sqlite3_open(path.c_str(), &db), db, "open");
  Check(sqlite3_exec(db,
                     ("PRAGMA journal_mode=WAL; PRAGMA synchronous=" + sync + "; " + setup).c_str(),
                     nullptr, nullptr, nullptr),
        db, "setup");
  return db;
}

// Rows/s of `jobs` rows inserted with `insert`, `batch` to a transaction; `bind` binds
// row `done`'s values (`now`: one time per batch, as a batch submit has). Closes `db`.
double TimedInserts(sqlite3* db, const char* insert, int jobs, int batch,
                    const std::function<void(sqlite3_stmt*, int done, int64_t now)>& bind) {
  sqlite3_stmt* stmt = nullptr;
  Check(sqlite3_prepare_v2(db, insert, -1, &stmt, nullptr), db, "prepare");
  const auto start = SteadyClock::now();
  for (int done = 0; done < jobs;) {
    Check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, "begin");
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (int i = 0; i < batch && done < jobs; ++i, ++done) {
      bind(stmt, done, now);
      Check(sqlite3_step(stmt), db, "insert");
      sqlite3_reset(stmt);
    }
    Check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
  }
  const double s = Seconds(start);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return jobs / s;
}

// Jobs/s of `jobs` rows inserted `batch` to a transaction into sluice's jobs table: the
// database made by SqliteStore (its schema and indexes), then sluice's insert_job
// statement with the values a submit stores.
double RawInsert(const std::string& path, int jobs, int batch, const std::string& sync) {
  {
    sluice::SqliteStoreOptions options;
    options.path = path;
    auto made = sluice::SqliteStore::Open(options);
    if (!made.ok()) {
      std::fprintf(stderr, "open %s: %s\n", path.c_str(), made.error().detail.c_str());
      std::exit(2);
    }
  }
  const std::string payload = R"({"n":1,"report":"monthly"})";
  return TimedInserts(
      OpenRaw(path, sync, ""),
      "INSERT INTO jobs (id, queue, tenant, state, payload, cost, attempt, max_attempts, "
      "lease_ms, policy_version, created_at, not_before, available_at, deadline_at, "
      "estimated_start, traceparent) VALUES (?1, ?2, ?3, 'queued', ?4, ?5, 0, ?6, ?7, ?8, "
      "?9, ?10, ?11, ?12, ?13, ?14)",
      jobs, batch, [&payload](sqlite3_stmt* insert, int done, int64_t now) {
        const std::string id = sluice::TimeOrderedId("job_", now, 6);
        const std::string tenant = "tenant" + std::to_string(done % 10);
        sqlite3_bind_text(insert, 1, id.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert, 2, "bench", -1, SQLITE_STATIC);
        sqlite3_bind_text(insert, 3, tenant.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(insert, 4, payload.c_str(), -1, SQLITE_STATIC);
        sqlite3_bind_int64(insert, 5, 1);
        sqlite3_bind_int64(insert, 6, 3);
        sqlite3_bind_int64(insert, 7, 30000);
        sqlite3_bind_int64(insert, 8, 1);
        sqlite3_bind_int64(insert, 9, now);
        sqlite3_bind_null(insert, 10);
        sqlite3_bind_int64(insert, 11, now);
        sqlite3_bind_null(insert, 12);
        sqlite3_bind_int64(insert, 13, now);
        sqlite3_bind_null(insert, 14);
      });
}

// The same for the table of ../shared/peer-bench/sqlite_bench.c (the issue's ~396k
// rows/s): (id INTEGER PRIMARY KEY, tenant, state, deadline, payload BLOB(100)) and one
// index, no text id, no CHECKs.
double RawPeerInsert(const std::string& path, int jobs, int batch, const std::string& sync) {
  const std::string payload(100, 'x');
  return TimedInserts(
      OpenRaw(path, sync,
              "CREATE TABLE jobs(id INTEGER PRIMARY KEY, tenant INT NOT NULL, state INT NOT NULL "
              "DEFAULT 0, deadline INT, payload BLOB); CREATE INDEX jobs_ready ON jobs(tenant, "
              "state, id);"),
      "INSERT INTO jobs(tenant,deadline,payload) VALUES(?,?,?)", jobs, batch,
      [&payload](sqlite3_stmt* insert, int done, int64_t /*now*/) {
        sqlite3_bind_int(insert, 1, done % 10);
        sqlite3_bind_int64(insert, 2, done);
        sqlite3_bind_blob(insert, 3, payload.data(), static_cast<int>(payload.size()),
                          SQLITE_STATIC);
      });
}

struct HttpRound {
  double jobs_per_s = 0;
  double cpu_us_per_job = 0;
  int64_t not_admitted = 0;
};

HttpRound HttpBatches(const std::string& dir, int jobs, int batch, int connections,
                      const std::string& sync) {
  sluice::testing::ServerOptions options;
  options.db_path = dir + "/sluice.db";
  options.extra_args = {"--synchronous", sync};
  sluice::testing::ServerProcess server(options);
  auto admin = server.Client(server.admin_token());
  // Far above what the machine can do: the shaper never refuses or holds back.
  const int64_t capacity = jobs;
  auto put = sluice::testing::Call(*admin, "PUT", "/v1/admin/queues/bench",
                                   {{"rate", 1'000'000}, {"capacity", capacity}, {"burst", 1000}},
                                   sluice::testing::Bearer(server.admin_token()));
  if (put.status != 200) {
    std::fprintf(stderr, "PUT queue: %d %s\n", put.status, put.body.dump().c_str());
    std::exit(2);
  }
  std::vector<std::string> tokens;
  for (int c = 0; c < connections; ++c) {
    auto t =
        sluice::testing::Call(*admin, "POST", "/v1/admin/tokens",
                              {{"scopes", {"submit"}}, {"tenant", "tenant" + std::to_string(c)}},
                              sluice::testing::Bearer(server.admin_token()));
    tokens.push_back(t.body["token"]);
  }
  // The bodies, made before the clock starts.
  std::vector<std::string> bodies;
  for (int b = 0; b * batch < jobs; ++b) {
    json items = json::array();
    for (int i = b * batch; i < std::min(jobs, (b + 1) * batch); ++i) {
      items.push_back({{"payload", {{"n", i}, {"report", "monthly"}}}});
    }
    bodies.push_back(json{{"jobs", items}}.dump());
  }
  std::atomic<size_t> next{0};
  std::atomic<int64_t> admitted{0}, refused{0};
  const double cpu_before = CpuSeconds(server.pid());
  const auto start = SteadyClock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      auto http = server.Client(tokens[static_cast<size_t>(c)]);
      for (size_t b; (b = next.fetch_add(1)) < bodies.size();) {
        auto r = http->Post("/v1/queues/bench/jobs:batch", bodies[b], "application/json");
        if (!r || r->status != 200) {
          if (refused.fetch_add(1) == 0) {
            std::fprintf(stderr, "jobs:batch: %s\n",
                         r ? (std::to_string(r->status) + " " + r->body).c_str() : "no answer");
          }
          continue;
        }
        const json answer = json::parse(r->body);
        for (const json& item : answer["results"]) {
          if (item["status"] == 202) {
            ++admitted;
          } else if (refused.fetch_add(1) == 0) {
            std::fprintf(stderr, "jobs:batch item: %s\n", item.dump().c_str());
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  HttpRound out;
  const double s = Seconds(start);
  out.jobs_per_s = static_cast<double>(admitted.load()) / s;
  out.cpu_us_per_job =
      (CpuSeconds(server.pid()) - cpu_before) * 1e6 / std::max<int64_t>(1, admitted.load());
  out.not_admitted = refused.load() + (jobs - admitted.load() - refused.load());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, jobs = 200000, batch = 1000, connections = 2;
  std::string sync = "FULL";
  CLI::App cli{"sluiced's batch intake beside a raw SQLite batched insert"};
  cli.add_option("--rounds", rounds)->check(CLI::PositiveNumber);
  cli.add_option("--jobs", jobs, "jobs per round and side")->check(CLI::PositiveNumber);
  cli.add_option("--batch", batch, "jobs per request and per raw transaction")
      ->check(CLI::Range(1, 1000));
  cli.add_option("--connections", connections)->check(CLI::PositiveNumber);
  cli.add_option("--synchronous", sync)->check(CLI::IsMember({"FULL", "NORMAL"}));
  CLI11_PARSE(cli, argc, argv);

  std::vector<double> raw, peer, http, ratio, peer_ratio, cpu;
  int64_t not_admitted = 0;
  for (int r = 0; r < rounds; ++r) {
    sluice::testing::TempDir raw_dir, http_dir;
    const double raw_rate = RawInsert(raw_dir.path() + "/raw.db", jobs, batch, sync);
    const double peer_rate = RawPeerInsert(raw_dir.path() + "/peer.db", jobs, batch, sync);
    const HttpRound h = HttpBatches(http_dir.path(), jobs, batch, connections, sync);
    raw.push_back(raw_rate);
    peer.push_back(peer_rate);
    http.push_back(h.jobs_per_s);
    ratio.push_back(h.jobs_per_s / raw_rate);
    peer_ratio.push_back(h.jobs_per_s / peer_rate);
    cpu.push_back(h.cpu_us_per_job);
    not_admitted += h.not_admitted;
    std::printf(
        "round %d: raw insert into sluice's table %.0f rows/s, into the peer-bench table %.0f "
        "rows/s; jobs:batch %.0f jobs/s (%.2fx, %.2fx), sluiced %.1f us/job\n",
        r + 1, raw_rate, peer_rate, h.jobs_per_s, h.jobs_per_s / raw_rate, h.jobs_per_s / peer_rate,
        h.cpu_us_per_job);
    std::fflush(stdout);
  }
  json out = {{"synchronous", sync},
              {"rounds", rounds},
              {"jobs_per_round", jobs},
              {"batch", batch},
              {"connections", connections},
              {"raw_rows_per_s", Median(raw)},
              {"peer_table_rows_per_s", Median(peer)},
              {"batch_jobs_per_s", Median(http)},
              {"ratio", Median(ratio)},
              {"ratio_to_peer_table", Median(peer_ratio)},
              {"sluiced_cpu_us_per_job", Median(cpu)},
              {"not_admitted", not_admitted}};
  std::printf("%s\n", out.dump().c_str());
  return not_admitted == 0 ? 0 : 1;
}
