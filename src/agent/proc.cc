// /proc parsing and signal names.
#include "agent/proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string_view>

namespace sluice::agent {

// One open() and one read() into a stack buffer: the agent calls this for every pod it starts,
// and an ifstream's buffer allocation plus the stream machinery cost more than the read.
std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  char path[256];
  const int n =
      std::snprintf(path, sizeof path, "%s/%d/stat", proc_root.c_str(), static_cast<int>(pid));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof path) return std::nullopt;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];  // the whole line: 52 numbers and a comm of at most 64 bytes
  ssize_t got = 0;
  while (true) {
    got = ::read(fd, buf, sizeof buf - 1);
    if (got >= 0 || errno != EINTR) break;
  }
  ::close(fd);
  if (got <= 0) return std::nullopt;
  const std::string_view line(buf, static_cast<size_t>(got));
  // "pid (comm) state ppid pgrp ..." and comm may hold spaces and parentheses: fields after the
  // last ')' are numbered from 3 (state).
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  auto next = [&rest]() -> std::string_view {
    const size_t b = rest.find_first_not_of(" \n");
    if (b == std::string_view::npos) return {};
    const size_t e = rest.find_first_of(" \n", b);
    std::string_view f = rest.substr(b, e == std::string_view::npos ? rest.size() - b : e - b);
    rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
    return f;
  };
  auto number = [](std::string_view f, auto& out) {
    return !f.empty() && std::from_chars(f.data(), f.data() + f.size(), out).ec == std::errc{};
  };
  ProcStat st;
  const std::string_view state = next();
  if (state.size() != 1) return std::nullopt;
  st.state = state[0];
  int64_t ppid = 0;
  if (!number(next(), ppid) || !number(next(), st.pgrp)) return std::nullopt;
  // Fields 6..21 come before starttime (field 22).
  for (int f = 6; f <= 21; ++f)
    if (next().empty()) return std::nullopt;
  if (!number(next(), st.start_ticks)) return std::nullopt;
  return st;
}

int64_t boottime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::optional<uint64_t> start_ticks_within(const StartWindow& w) {
  // The kernel's and the vDSO's readings of one clock agree to far better than this; the
  // margin only keeps a start that lies near a tick's edge from being guessed.
  constexpr int64_t kMarginNs = 50'000;
  static const int64_t ns_per_tick = [] {
    const long hz = ::sysconf(_SC_CLK_TCK);
    return hz > 0 && 1'000'000'000 % hz == 0 ? 1'000'000'000 / hz : 0;
  }();
  if (ns_per_tick == 0 || w.before_ns < kMarginNs || w.after_ns < w.before_ns) return std::nullopt;
  const int64_t first = (w.before_ns - kMarginNs) / ns_per_tick;
  const int64_t last = (w.after_ns + kMarginNs) / ns_per_tick;
  if (first != last) return std::nullopt;
  return static_cast<uint64_t>(first);
}

namespace {
struct SigName {
  const char* name;
  int sig;
};
constexpr SigName kSignals[] = {{"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGINT", SIGINT},
                                {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1},
                                {"SIGUSR2", SIGUSR2}, {"SIGABRT", SIGABRT}, {"SIGSEGV", SIGSEGV},
                                {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGCONT", SIGCONT},
                                {"SIGSTOP", SIGSTOP}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
                                {"SIGILL", SIGILL},   {"SIGTRAP", SIGTRAP}, {"SIGXCPU", SIGXCPU}};
}  // namespace

std::optional<int> parse_signal(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find_first_not_of("0123456789") == std::string::npos) {
    if (name.size() > 3) return std::nullopt;
    int n = std::stoi(name);
    if (n >= 1 && n < NSIG) return n;
    return std::nullopt;
  }
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.rfind("SIG", 0) != 0) upper = "SIG" + upper;
  for (const auto& s : kSignals) {
    if (upper == s.name) return s.sig;
  }
  return std::nullopt;
}

std::string signal_name(int sig) {
  for (const auto& s : kSignals) {
    if (s.sig == sig) return s.name;
  }
  return "signal " + std::to_string(sig);
}

void for_each_process(const std::function<void(pid_t, const ProcStat&)>& f,
                      const std::string& proc_root) {
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (auto st = read_proc_stat(static_cast<pid_t>(pid), proc_root))
      f(static_cast<pid_t>(pid), *st);
  }
  ::closedir(dir);
}

void signal_pod_group(pid_t leader, int sig, bool spare_leader, const std::string& proc_root) {
  if (leader <= 0) return;
  if (!spare_leader || sig == SIGKILL) {
    if (::kill(-leader, sig) != 0 && errno == ESRCH) ::kill(leader, sig);
    return;
  }
  // A member forked meanwhile misses this signal and dies with the sandbox (its PID
  // namespace's init is in the group and gets the SIGKILL).
  for_each_process(
      [&](pid_t pid, const ProcStat& st) {
        if (pid != leader && st.pgrp == leader) ::kill(pid, sig);
      },
      proc_root);
}

int kill_group_remnants(pid_t leader, uint64_t leader_start_ticks, const std::string& proc_root) {
  if (leader <= 0) return 0;
  if (auto st = read_proc_stat(leader, proc_root);
      st && st->state != 'Z' && st->start_ticks != leader_start_ticks)
    return 0;  // the pid is someone else's now
  int killed = 0;
  for_each_process(
      [&](pid_t pid, const ProcStat& st) {
        if (st.pgrp == leader && st.state != 'Z' && st.start_ticks >= leader_start_ticks &&
            ::kill(pid, SIGKILL) == 0)
          ++killed;
      },
      proc_root);
  return killed;
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return ts;
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace sluice::agent
