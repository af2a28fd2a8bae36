#pragma once
// Small Linux process helpers: /proc/<pid>/stat, signal names, monotonic and wall clocks.
#include <sys/types.h>

#include <cstdint>
#include <functional>
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

// A child's start_ticks without reading /proc: the boot-time clock read just before and just
// after the call that created it (fork, vfork, clone) brackets the kernel's record of its
// start, which /proc/<pid>/stat gives in clock ticks (floor of the boot-time nanoseconds over
// 1e9 / CLK_TCK). When both readings, widened by a margin, fall in one tick, that tick is the
// child's; otherwise (a few percent of spawns) nullopt: read_proc_stat() then.
struct StartWindow {
  int64_t before_ns = 0;  // boottime_ns() before the fork
  int64_t after_ns = 0;   // and after it returned in the parent
};
int64_t boottime_ns();  // CLOCK_BOOTTIME, as the kernel stamps a task's start
std::optional<uint64_t> start_ticks_within(const StartWindow& w);

// Calls f(pid, stat) for every process of `proc_root` whose stat can be read (one pass over
// the directory: bounded by the machine's process count).
void for_each_process(const std::function<void(pid_t, const ProcStat&)>& f,
                      const std::string& proc_root = "/proc");

// Sends `sig` to a pod's process group, led by `leader`. With `spare_leader` (a sandboxed pod,
// whose leader is the outer bwrap: it dies at a SIGTERM and its sandbox with it, cutting the
// pod's grace), every member but the leader gets it; SIGKILL always goes to the whole group.
// Falls back to the leader alone when the group is gone but the leader is not.
void signal_pod_group(pid_t leader, int sig, bool spare_leader,
                      const std::string& proc_root = "/proc");

// SIGKILLs what is left of a pod's process group once its leader (pid `leader`, started at
// `leader_start_ticks`) is gone: background processes of a pod whose main process ended while
// its agent was down. Nothing when `leader` names another process now (a reused pid that may
// lead a group of its own); otherwise the group id cannot have been reused while a member
// lives. Returns how many were killed.
int kill_group_remnants(pid_t leader, uint64_t leader_start_ticks,
                        const std::string& proc_root = "/proc");

// "SIGTERM", "TERM", "15" -> 15; nullopt for anything else.
std::optional<int> parse_signal(const std::string& name);
// 15 -> "SIGTERM" (falls back to "signal N").
std::string signal_name(int sig);

int64_t unix_now_ns();
// "2026-12-02T00:52:02Z": the start of a log line.
std::string utc_timestamp();

}  // namespace sluice::agent
