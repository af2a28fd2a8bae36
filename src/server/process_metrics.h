#pragma once
// The standard process_* metrics of Prometheus client libraries (CPU time, memory, file
// descriptors, start time) and sluice_build_info, read from /proc/self (Linux) and written in the
// text format by hand, like the rest of /metrics.
#include <optional>
#include <string>
#include <string_view>

#include "server/metrics.h"

namespace sluice::server {

struct ProcessSample {
  double cpu_seconds = 0;     // user + system
  double resident_bytes = 0;  // RSS
  double virtual_bytes = 0;
  double start_time_s = 0;  // Unix time
  double open_fds = 0;
  double max_fds = 0;  // the soft RLIMIT_NOFILE
};

// Fields of /proc/<pid>/stat (proc(5)): the command name in parentheses may hold spaces and
// parentheses, so fields are counted from the last ')'. Nullopt when the text is not one.
std::optional<ProcessSample> parse_proc_stat(std::string_view stat, double ticks_per_s,
                                             double page_bytes, double boot_time_s);
// "btime N" of /proc/stat: the boot time, Unix seconds.
std::optional<double> parse_boot_time(std::string_view proc_stat);

// This process now; nullopt where /proc cannot be read (the families are then left out).
std::optional<ProcessSample> sample_process();

void write_process_metrics(PromWriter& w, const ProcessSample& s);
// sluice_build_info{version, commit} 1.
void write_build_info(PromWriter& w);

// Both, for the server's /metrics.
std::string process_metrics_text();

}  // namespace sluice::server
