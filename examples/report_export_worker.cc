// The report-export worker in-process, with the C++ library (worker/worker.h): each job's
// payload {"report": name, "columns": [...], "rows": [[...], ...]} becomes a CSV file
// OUT/<tenant>/<report>-<job id>.csv, the same file examples/report_export.sh writes
// under sluice-worker. The work takes --ms-per-row per row (the simulated cost of a
// real export), and stops early if the lease is lost.
//   SLUICE_TOKEN=... sluice-report-worker --server URL --out var/reports [--concurrency 2]
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "client/server_flag.h"
#include "worker/signals.h"
#include "worker/worker.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Letters, digits, '-' and '_' kept; anything else becomes '_' (as the script does).
std::string SafeName(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return out;
}

// One CSV field as jq's @csv writes it: strings quoted, quotes doubled; null empty.
std::string CsvField(const json& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  std::string out = "\"";
  for (char c : v.get<std::string>()) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

bool IsCsvRow(const json& row) {
  if (!row.is_array()) return false;
  for (const json& v : row) {
    if (v.is_array() || v.is_object()) return false;
  }
  return true;
}

sluice::JobOutcome ExportReport(sluice::JobContext& ctx, const fs::path& out_dir, int ms_per_row) {
  const sluice::LeasedJob& job = ctx.job();
  const json& p = job.payload;
  if (!p.is_object() || !p.contains("columns") || !IsCsvRow(p["columns"]) || !p.contains("rows") ||
      !p["rows"].is_array()) {
    return sluice::JobOutcome::Fail("payload needs 'columns' and 'rows' arrays", false);
  }
  for (const json& row : p["rows"]) {
    if (!IsCsvRow(row)) return sluice::JobOutcome::Fail("each row must be an array", false);
  }
  const std::string report = p.value("report", "report");
  const fs::path dir = out_dir / SafeName(job.tenant);
  const fs::path file = dir / (SafeName(report) + "-" + job.id + ".csv");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return sluice::JobOutcome::Fail("cannot create " + dir.string(), true, 5000);

  const fs::path tmp = file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    auto line = [&](const json& row) {
      for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << CsvField(row[i]);
      out << "\n";
    };
    line(p["columns"]);
    for (const json& row : p["rows"]) line(row);
    if (!out.flush()) return sluice::JobOutcome::Fail("cannot write " + tmp.string(), true, 5000);
  }
  const size_t rows = p["rows"].size();
  // The expensive part of a real export, proportional to its size. Stop if the lease
  // is lost: another worker may be writing the same report.
  if (!ctx.SleepFor(std::chrono::milliseconds(static_cast<int64_t>(rows) * ms_per_row))) {
    fs::remove(tmp, ec);
    return sluice::JobOutcome::Fail("stopped: " +
                                    std::string(sluice::StopReasonName(ctx.reason())));
  }
  fs::rename(tmp, file, ec);  // a retry overwrites, never duplicates
  if (ec) return sluice::JobOutcome::Fail("cannot rename to " + file.string(), true, 5000);
  return sluice::JobOutcome::Complete(
      {{"path", file.string()}, {"rows", rows}, {"bytes", fs::file_size(file, ec)}});
}

}  // namespace

int main(int argc, char** argv) {
  sluice::WorkerOptions options;
  options.queues = {"report-export"};
  std::string out_dir = "var/reports";
  int ms_per_row = 20;
  CLI::App cli{"report-export worker (in-process, C++ library)"};
  sluice::AddServerFlag(cli, options.server, "sluice URL")->required()->envname("SLUICE_SERVER");
  cli.add_option("--token", options.token, "work token (prefer SLUICE_TOKEN)")
      ->envname("SLUICE_TOKEN");
  cli.add_option("--queue", options.queues, "queue(s) to work on");
  cli.add_option("--concurrency", options.concurrency, "reports written at once");
  cli.add_option("--out", out_dir, "where the CSV files go");
  cli.add_option("--ms-per-row", ms_per_row, "simulated work per row");
  cli.add_option("--worker-id", options.worker_id, "name in logs and the server's records");
  cli.add_option("--wait-ms", options.wait_ms,
                 "long-poll length; also the longest a SIGTERM waits for the poll in flight");
  CLI11_PARSE(cli, argc, argv);
  if (options.token.empty()) {
    std::fprintf(stderr, "set SLUICE_TOKEN (a work-scoped token)\n");
    return 2;
  }
  auto logger = spdlog::stderr_logger_mt("report-worker");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v", spdlog::pattern_time_type::utc);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);

  sluice::BlockStopSignals();  // before any thread starts (worker/signals.h)
  sluice::Worker worker(
      options, [&](sluice::JobContext& ctx) { return ExportReport(ctx, out_dir, ms_per_row); });
  // The first SIGINT or SIGTERM drains; later ones change nothing.
  sluice::Status status = sluice::RunUntilSignalled(worker, [&](int, int nth) {
    if (nth == 1) worker.Stop();
  });
  if (!status.ok()) {
    spdlog::error("{}", status.error().detail);
    return 1;
  }
  return 0;
}
