#include "server/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "build_info.h"

namespace sluice::server {

namespace {

std::string read_file(const char* path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::optional<double> to_number(std::string_view t) {
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<ProcessSample> parse_proc_stat(std::string_view stat, double ticks_per_s,
                                             double page_bytes, double boot_time_s) {
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_s <= 0) return std::nullopt;
  // Fields after the name: [0] is field 3 (state), so field N is at N - 3.
  std::vector<std::string_view> f;
  for (size_t i = close + 1; i < stat.size();) {
    while (i < stat.size() && (stat[i] == ' ' || stat[i] == '\n')) ++i;
    size_t j = i;
    while (j < stat.size() && stat[j] != ' ' && stat[j] != '\n') ++j;
    if (j > i) f.push_back(stat.substr(i, j - i));
    i = j;
  }
  if (f.size() < 22) return std::nullopt;
  auto utime = to_number(f[14 - 3]), stime = to_number(f[15 - 3]);
  auto start = to_number(f[22 - 3]), vsize = to_number(f[23 - 3]), rss = to_number(f[24 - 3]);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  ProcessSample s;
  s.cpu_seconds = (*utime + *stime) / ticks_per_s;
  s.start_time_s = boot_time_s + *start / ticks_per_s;
  s.virtual_bytes = *vsize;
  s.resident_bytes = *rss * page_bytes;
  return s;
}

std::optional<double> parse_boot_time(std::string_view proc_stat) {
  for (size_t i = 0; i < proc_stat.size();) {
    size_t e = proc_stat.find('\n', i);
    if (e == std::string_view::npos) e = proc_stat.size();
    std::string_view line = proc_stat.substr(i, e - i);
    if (line.starts_with("btime ")) return to_number(line.substr(6));
    i = e + 1;
  }
  return std::nullopt;
}

std::optional<ProcessSample> sample_process() {
  auto boot = parse_boot_time(read_file("/proc/stat"));
  if (!boot) return std::nullopt;
  auto s = parse_proc_stat(read_file("/proc/self/stat"), static_cast<double>(sysconf(_SC_CLK_TCK)),
                           static_cast<double>(sysconf(_SC_PAGESIZE)), *boot);
  if (!s) return std::nullopt;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    s->open_fds += 1;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0)
    s->max_fds = lim.rlim_cur == RLIM_INFINITY ? std::numeric_limits<double>::infinity()
                                               : static_cast<double>(lim.rlim_cur);
  return s;
}

void write_process_metrics(PromWriter& w, const ProcessSample& s) {
  w.family("process_cpu_seconds_total", "counter", "Total user and system CPU time in seconds.");
  w.sample("process_cpu_seconds_total", {}, s.cpu_seconds);
  w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  w.sample("process_resident_memory_bytes", {}, s.resident_bytes);
  w.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  w.sample("process_virtual_memory_bytes", {}, s.virtual_bytes);
  w.family("process_open_fds", "gauge", "Number of open file descriptors.");
  w.sample("process_open_fds", {}, s.open_fds);
  w.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
  w.sample("process_max_fds", {}, s.max_fds);
  w.family("process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
  w.sample("process_start_time_seconds", {}, s.start_time_s);
}

void write_build_info(PromWriter& w) {
  w.family("sluice_build_info", "gauge",
           "Always 1; the labels say which sluice runs (version, git commit).");
  w.sample("sluice_build_info", {{"commit", build_commit()}, {"version", build_version()}}, 1);
}

std::string process_metrics_text() {
  PromWriter w;
  write_build_info(w);
  if (auto s = sample_process()) write_process_metrics(w, *s);
  return w.text();
}

}  // namespace sluice::server
