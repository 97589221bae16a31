#include "server/log.h"

#include <spdlog/async.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "common/crypto.h"
#include "common/time.h"

namespace sluice {
namespace {

LogFormat format = LogFormat::kText;
std::string instance;

// logfmt value: bare when plain, else quoted with escapes.
std::string LogfmtValue(const nlohmann::json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  bool plain = !s.empty() && s.find_first_of(" \"=\\\n\t") == std::string::npos;
  if (plain) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

void ConfigureLogging(LogFormat f, std::string instance_id) {
  format = f;
  instance = std::move(instance_id);
  spdlog::init_thread_pool(8192, 1);
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::async_logger>("sluiced", sink, spdlog::thread_pool(),
                                                       spdlog::async_overflow_policy::block);
  // The time and level are part of each line's text (they differ per format).
  logger->set_pattern(f == LogFormat::kJson ? "%v" : "%Y-%m-%dT%H:%M:%S.%eZ %l %v",
                      spdlog::pattern_time_type::utc);
  spdlog::set_default_logger(logger);
  spdlog::flush_every(std::chrono::seconds(1));
  spdlog::flush_on(spdlog::level::warn);
}

void LogEvent(spdlog::level::level_enum level, std::string_view event,
              const nlohmann::json& fields) {
  if (!spdlog::should_log(level)) return;
  if (format == LogFormat::kJson) {
    nlohmann::json line = {{"time", FormatRfc3339(WallNowMicros())},
                           {"level", spdlog::level::to_string_view(level).data()},
                           {"event", event},
                           {"instance", instance}};
    for (const auto& [k, v] : fields.items()) line[k] = v;
    spdlog::log(level, "{}", line.dump());
    return;
  }
  std::string line(event);
  line += " instance=" + instance;
  for (const auto& [k, v] : fields.items()) line += " " + k + "=" + LogfmtValue(v);
  spdlog::log(level, "{}", line);
}

std::string TokenDigest(std::string_view token) {
  return Sha256Hex(std::string(token)).substr(0, 12);
}

}  // namespace sluice
