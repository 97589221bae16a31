// The standard process metrics of the Prometheus client libraries (process_cpu_seconds_total,
// process_resident_memory_bytes, process_open_fds, ...), read from /proc/self at scrape
// time, with the names, types and help texts client_golang's process collector uses.
// Thread-safe (reads only).
#pragma once

#include <optional>
#include <string>

namespace sluice {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0;
  double max_fds = 0;  // the soft limit
};

// nullopt where /proc cannot be read (then no process_* series are exported).
std::optional<ProcessStats> ReadProcessStats();

// Appends the process_* families to a text exposition.
void RenderProcessMetrics(std::string& out, const ProcessStats& stats);

}  // namespace sluice
