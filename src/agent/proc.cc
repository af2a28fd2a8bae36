// /proc parsing and signal names.
#include "agent/proc.h"

#include <ctime>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sluice::agent {

std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  // "pid (comm) state ppid pgrp ..." and comm may hold spaces and parentheses: fields after the
  // last ')' are numbered from 3 (state).
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  ProcStat st;
  std::string skip;
  int64_t ppid = 0;
  if (!(fields >> st.state >> ppid >> st.pgrp)) return std::nullopt;
  // Fields 6..21 come before starttime (field 22).
  for (int f = 6; f <= 21; ++f) {
    if (!(fields >> skip)) return std::nullopt;
  }
  if (!(fields >> st.start_ticks)) return std::nullopt;
  return st;
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
