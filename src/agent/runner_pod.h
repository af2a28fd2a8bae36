#pragma once
// One pod of a ProcessRunner, and the clock conversions its saved state (pods.json) uses: shared
// by process_runner.cc (launch, reaping, stops) and process_adopt.cc (save and adopt).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/proc.h"
#include "agent/process_runner.h"
#include "core/model/job.h"

namespace sluice::agent {

struct ProcessRunner::Pod {
  Pod() = default;
  Pod(const Pod&) = delete;
  Pod& operator=(const Pod&) = delete;
  ~Pod() {
    if (pidfd >= 0) ::close(pidfd);
  }
  PodLaunch spec;
  PodPaths paths;
  bool running = false;  // false: waiting for its GPUs
  bool child = true;     // false: adopted from pods.json (not our child: watched via /proc)
  pid_t pid = 0;
  // A pidfd of the pod's process (exit_waiter.h), opened at its start or adoption: the
  // supervisor sleeps on it. -1: none (a kernel without pidfd_open, a process that was gone, or
  // one that woke the supervisor while the pod ran on): the supervisor ticks every tick_ms while
  // such a pod runs.
  int pidfd = -1;
  uint64_t start_ticks = 0;
  int64_t started_unix_ns = 0;
  std::chrono::steady_clock::time_point queued;
  std::optional<std::chrono::steady_clock::time_point> walltime_deadline;
  // Stopping: a signal went out, SIGKILL follows at kill_deadline.
  bool stopping = false;
  bool killed = false;
  std::chrono::steady_clock::time_point kill_deadline;
  std::string exit_reason;  // "stopped" or "walltime" once stopping
  std::string stop_why;
  // Checkpoint file: last modification time seen (0: absent).
  int64_t checkpoint_mtime_ns = 0;
  // Bytes its log lost to the cap (log_cap.h), said in its exit's message.
  int64_t log_dropped = 0;
  // Its log's size when last watched, and whether it grew fast since the watch before (more
  // than 1/64 of the cap in 10 ticks' time): the supervisor then ticks, so that the log passes
  // its cap by no more than a tick's worth.
  int64_t log_size = 0;
  std::chrono::steady_clock::time_point log_seen;
  bool log_fast = false;
};

// A steady-clock time as Unix ns (what pods.json stores: the steady clock restarts with the
// machine) and back. A stored time is taken within 10 years of now, so a damaged file cannot
// overflow the conversion.
inline int64_t steady_to_unix_ns(std::chrono::steady_clock::time_point t) {
  const auto delta =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t - std::chrono::steady_clock::now());
  return unix_now_ns() + delta.count();
}
inline std::chrono::steady_clock::time_point unix_ns_to_steady(int64_t ns) {
  const int64_t now = unix_now_ns();
  const int64_t delta = std::clamp(ns, now - kMaxDurationNs, now + kMaxDurationNs) - now;
  return std::chrono::steady_clock::now() + std::chrono::nanoseconds(delta);
}

// A file's modification time in ns (0: absent).
inline int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace sluice::agent
