#include "server/log.h"

#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "common/crypto.h"
#include "common/logfmt.h"
#include "common/time.h"

namespace sluice {
namespace {

LogFormat format = LogFormat::kText;
std::string instance;

// JSON text that never throws: ill-formed UTF-8 in a string becomes U+FFFD.
std::string SafeDump(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string LogfmtJson(const nlohmann::json& v) {
  return v.is_string() ? LogfmtValue(v.get_ref<const std::string&>()) : LogfmtValue(SafeDump(v));
}

// Gathers formatted lines in memory and writes them to a file descriptor in large
// writes: once the buffer passes 64 KiB, on flush (every line at warn or above, and
// shutdown), and every 100 ms from its own thread. The caller formats its line and
// appends it under a mutex; nobody is woken per line, which matters at one access
// line per request (an asynchronous logger wakes its thread for each message).
class BufferedFdSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit BufferedFdSink(int fd) : fd_(fd), flusher_([this] { FlushLoop(); }) {}
  ~BufferedFdSink() override {
    {
      std::lock_guard lock(stop_mu_);
      stopping_ = true;
    }
    stop_cv_.notify_one();
    flusher_.join();
    std::lock_guard lock(mutex_);
    WriteOut();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    buffer_.append(formatted.data(), formatted.size());
    if (buffer_.size() >= kHighWater) WriteOut();
  }
  void flush_() override { WriteOut(); }

 public:
  // A line formatted whole by the caller (its time, level and end of line included).
  void AppendLine(std::string_view line) {
    std::lock_guard lock(mutex_);
    buffer_.append(line);
    if (buffer_.size() >= kHighWater) WriteOut();
  }

 private:
  static constexpr size_t kHighWater = 64 * 1024;

  void WriteOut() {  // mutex_ held
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // nowhere to write: drop the lines rather than block
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
  }

  void FlushLoop() {
    std::unique_lock lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; })) {
      flush();
    }
  }

  const int fd_;
  std::string buffer_;  // guarded by mutex_
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::thread flusher_;
};

// The logger ConfigureLogging made and its sink, which access lines reach without
// spdlog's formatting while that logger is alive and the default one. Not owned here:
// spdlog::shutdown() still ends the logger, and its sink writes out what it holds.
std::weak_ptr<spdlog::logger> own_logger;
spdlog::logger* own_logger_raw = nullptr;
BufferedFdSink* sink = nullptr;

// A request's duration in ms, rounded to the µs: "12", "0.812", "3.05".
void AppendDurationMs(std::string& out, double ms) {
  const auto us = static_cast<int64_t>(std::llround(std::max(0.0, ms) * 1000));
  out += std::to_string(us / 1000);
  int64_t frac = us % 1000;
  if (frac == 0) return;
  char digits[4] = {static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                    static_cast<char>('0' + frac % 10), '\0'};
  int n = 3;
  while (digits[n - 1] == '0') --n;
  out += '.';
  out.append(digits, static_cast<size_t>(n));
}

}  // namespace

void ConfigureLogging(LogFormat f, std::string instance_id) {
  format = f;
  instance = std::move(instance_id);
  auto buffered = std::make_shared<BufferedFdSink>(STDERR_FILENO);
  auto logger = std::make_shared<spdlog::logger>("sluiced", buffered);
  sink = buffered.get();
  own_logger = logger;
  own_logger_raw = logger.get();
  // The time and level are part of each line's text (they differ per format).
  logger->set_pattern(f == LogFormat::kJson ? "%v" : "%Y-%m-%dT%H:%M:%S.%eZ %l %v",
                      spdlog::pattern_time_type::utc);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
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
    spdlog::log(level, "{}", SafeDump(line));
    return;
  }
  std::string line(event);
  line += " instance=" + instance;
  for (const auto& [k, v] : fields.items()) line += " " + LogfmtValue(k) + "=" + LogfmtJson(v);
  spdlog::log(level, "{}", line);
}

void LogRequest(std::string_view request_id, std::string_view method, std::string_view path,
                int status, double duration_ms, std::string_view remote,
                std::string_view client_ip) {
  if (!spdlog::should_log(spdlog::level::info)) return;
  if (format == LogFormat::kJson) {
    LogEvent(spdlog::level::info, "request",
             {{"request_id", request_id},
              {"client_ip", client_ip},
              {"method", method},
              {"path", path},
              {"status", status},
              {"duration_ms", duration_ms},
              {"remote", remote}});
    return;
  }
  // Same fields, same order and quoting as LogEvent's text format, and the same prefix
  // as the logger's pattern; appended straight to the sink: spdlog's formatting of the
  // time and of the arguments took half of this line's cost (4 % of a submit's CPU).
  std::string line;
  line.reserve(192 + path.size());
  // An alive logger is the only one at its address: the default one is then ours.
  const bool direct = spdlog::default_logger_raw() == own_logger_raw && !own_logger.expired();
  if (direct) {
    line += FormatRfc3339(WallNowMicros());
    line += " info ";
  }
  const size_t body = line.size();
  line += "request instance=";
  line += instance;
  auto field = [&line](std::string_view name, std::string_view value) {
    line += name;
    AppendLogfmtValue(line, value);
  };
  field(" client_ip=", client_ip);
  line += " duration_ms=";
  AppendDurationMs(line, duration_ms);
  field(" method=", method);
  field(" path=", path);
  field(" remote=", remote);
  field(" request_id=", request_id);
  line += " status=";
  line += std::to_string(status);
  if (!direct) {  // another logger (or none configured): through spdlog
    spdlog::info("{}", std::string_view(line).substr(body));
    return;
  }
  line += '\n';
  sink->AppendLine(line);
}

std::string TokenDigest(std::string_view token) {
  return Sha256Hex(std::string(token)).substr(0, 12);
}

}  // namespace sluice
