#include "server/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/metrics.h"

namespace sluice {
namespace {

std::optional<double> BootTimeSeconds() {
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return std::nullopt;
}

std::optional<double> CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // not the descriptor opendir itself holds
}

void Family(std::string& out, const char* name, const char* type, const char* help, double v) {
  AppendFamilyHeader(out, name, type, help);
  out += name;
  out += ' ';
  out += PrometheusNumber(v);
  out += '\n';
}

}  // namespace

std::optional<ProcessStats> ReadProcessStats() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces: fields count from
  // the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  for (std::string x; fields >> x;) f.push_back(x);
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  auto boot = BootTimeSeconds();
  auto fds = CountOpenFds();
  if (ticks <= 0 || page <= 0 || !boot || !fds) return std::nullopt;
  ProcessStats s;
  try {
    s.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;  // utime, stime
    s.start_time_seconds = *boot + std::stod(f[19]) / ticks;        // starttime
    s.virtual_bytes = std::stod(f[20]);                             // vsize
    s.resident_bytes = std::stod(f[21]) * page;                     // rss, in pages
  } catch (const std::exception&) {
    return std::nullopt;
  }
  s.open_fds = *fds;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) s.max_fds = static_cast<double>(limit.rlim_cur);
  return s;
}

void RenderProcessMetrics(std::string& out, const ProcessStats& s) {
  Family(out, "process_cpu_seconds_total", "counter",
         "Total user and system CPU time spent in seconds.", s.cpu_seconds);
  Family(out, "process_open_fds", "gauge", "Number of open file descriptors.", s.open_fds);
  Family(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", s.max_fds);
  Family(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
         s.virtual_bytes);
  Family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
         s.resident_bytes);
  Family(out, "process_start_time_seconds", "gauge",
         "Start time of the process since unix epoch in seconds.", s.start_time_seconds);
}

}  // namespace sluice
