#include "tests/fuzz/checked_log.h"

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "common/strict_json.h"
#include "common/utf8.h"

namespace sluice::fuzz {
namespace {

std::optional<LogFormat> current;
size_t lines = 0;

class CheckingSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit CheckingSink(LogFormat format) : format_(format) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string line(msg.payload.data(), msg.payload.size());
    ++lines;
    if (format_ == LogFormat::kJson) {
      auto j = ParseStrictJson(line);
      if (!j.ok() || !j.value().is_object()) Fail(line, "is not one JSON object");
      return;
    }
    if (!IsValidUtf8(line)) Fail(line, "is not valid UTF-8");
    for (unsigned char c : line) {
      if (c < 0x20 || c == 0x7f) Fail(line, "holds a control character");
    }
  }
  void flush_() override {}

 private:
  [[noreturn]] static void Fail(const std::string& line, const char* why) {
    std::fprintf(stderr, "log line %s: %s\n", why, SanitizeUtf8(line).c_str());
    std::abort();
  }

  const LogFormat format_;
};

}  // namespace

void UseCheckedLog(LogFormat format) {
  if (current == format) return;
  ConfigureLogging(format, "fuzz");  // sets the format; its stderr logger is replaced next
  auto logger = std::make_shared<spdlog::logger>("fuzz", std::make_shared<CheckingSink>(format));
  logger->set_level(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  current = format;
}

size_t CheckedLogLines() { return lines; }

}  // namespace sluice::fuzz
