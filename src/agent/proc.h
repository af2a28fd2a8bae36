#pragma once
// Small Linux process helpers: /proc/<pid>/stat, signal names, monotonic and wall clocks.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::agent {

struct ProcStat {
  char state = '?';          // R, S, D, Z, ...
  int64_t pgrp = 0;          // process group
  uint64_t start_ticks = 0;  // start time in clock ticks since boot: (pid, start) names a process
};

// nullopt when the process does not exist (or /proc is unreadable).
std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root = "/proc");

// "SIGTERM", "TERM", "15" -> 15; nullopt for anything else.
std::optional<int> parse_signal(const std::string& name);
// 15 -> "SIGTERM" (falls back to "signal N").
std::string signal_name(int sig);

int64_t unix_now_ns();
// "2026-12-02T00:52:02Z": the start of a log line.
std::string utc_timestamp();

}  // namespace sluice::agent
