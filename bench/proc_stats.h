// What /proc says of a process, for the benchmarks: CPU time and memory. Linux only.
#pragma once

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace sluice::bench {

// Clock ticks of /proc/<pid>/stat: utime + stime (all threads), plus cutime + cstime
// (the children it reaped) when `reaped`; 0 once the process is gone.
inline long long StatTicks(pid_t pid, bool reaped) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  long long ticks = 0;
  for (int i = 3; i <= 17 && rest >> field; ++i) {
    if (i == 14 || i == 15 || (reaped && (i == 16 || i == 17))) ticks += std::stoll(field);
  }
  return ticks;
}

inline double TicksToSeconds(long long ticks) {
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// utime + stime of a process, all threads, in seconds (0 once it is gone).
inline double CpuSeconds(pid_t pid) { return TicksToSeconds(StatTicks(pid, false)); }

// CPU seconds of a process and its children: its own utime + stime, what it reaped
// (cutime + cstime), and the utime + stime of its live children (a PostgreSQL
// postmaster and its backends). A child that exits between two readings moves from the
// live sum into the reaped one, so a difference of readings is what the tree spent.
inline double TreeCpuSeconds(pid_t pid) {
  long long total = StatTicks(pid, true);
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  for (pid_t child; children >> child;) total += StatTicks(child, false);
  return TicksToSeconds(total);
}

// Bytes the process caused to be written to storage (/proc/<pid>/io write_bytes: its
// WAL appends and checkpoint copies, whenever the kernel writes them back); 0 if unknown.
inline double WriteBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/io");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("write_bytes:", 0) == 0) return std::stod(line.substr(12));
  }
  return 0;
}

// A "kB" field of /proc/<pid>/status (VmRSS, VmHWM), in MiB; 0 if missing.
inline double StatusMiB(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + ":", 0) == 0) return std::stod(line.substr(name.size() + 1)) / 1024.0;
  }
  return 0;
}

}  // namespace sluice::bench
