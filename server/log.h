// Structured log lines: one event name and its fields, as logfmt text
// (`2026-11-29T23:39:39.166Z info rejected queue=q tenant=acme ...`) or as one JSON
// object per line (`--log-format json`). Every line carries the instance id.
// Tokens never reach a log line: callers pass token ids (public) or TokenDigest().
// Thread-safe; lines are buffered and written every 100 ms (at once from warn up).
#pragma once

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sluice {

enum class LogFormat { kText, kJson };

// Sets up the default logger (stderr, buffered). Call once, before logging.
void ConfigureLogging(LogFormat format, std::string instance_id);

void LogEvent(spdlog::level::level_enum level, std::string_view event,
              const nlohmann::json& fields);

// The access line of one request (event "request"), formatted without building a JSON
// object in the text format: it is written once per request.
void LogRequest(std::string_view request_id, std::string_view method, std::string_view path,
                int status, double duration_ms, std::string_view remote,
                std::string_view client_ip);

// A short digest of a presented bearer token (first 12 hex of its SHA-256): lets
// log lines about refused tokens be correlated without holding anything secret.
std::string TokenDigest(std::string_view token);

}  // namespace sluice
