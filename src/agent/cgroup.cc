#include "agent/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace sluice::agent {
namespace {

constexpr int64_t kCpuPeriodUs = 100'000;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `value` to a cgroup control file; "" on success, else why.
std::string write_control(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return "cannot write \"" + value + "\" to " + path + ": " + std::strerror(e);
  return {};
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// The machine's answer to "may pods get cgroups under root?": "" when yes, else why not.
std::string setup_root(const std::string& root) {
  const std::string parent = root.substr(0, root.find_last_of('/'));
  const std::string available = read_text(parent + "/cgroup.controllers");
  for (const char* c : {"cpu", "memory"})
    if (!has_word(available, c))
      return std::string("the ") + c + " controller is not available in " + parent +
             " (cgroup.controllers: \"" + available.substr(0, available.find('\n')) +
             "\"; a hybrid cgroup v1/v2 machine, or controllers not delegated)";
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST)
    return "cannot create " + root + ": " + std::strerror(errno);
  // Controllers must be enabled on the way down: in the parent (for root itself) and in root
  // (for the pods' groups). A group holding processes cannot enable them (EBUSY): root's
  // default is the hierarchy's top, which may.
  for (const std::string& dir : {parent, root}) {
    const std::string enabled = read_text(dir + "/cgroup.subtree_control");
    if (has_word(enabled, "cpu") && has_word(enabled, "memory")) continue;
    if (auto why = write_control(dir + "/cgroup.subtree_control", "+cpu +memory"); !why.empty())
      return why;
  }
  return {};
}

}  // namespace

std::string cpu_max_value(int64_t cpu_milli) {
  if (cpu_milli <= 0) return "max " + std::to_string(kCpuPeriodUs);
  // At least 1 ms of CPU per period: the kernel refuses quotas under 1000 us.
  return std::to_string(std::max<int64_t>(cpu_milli * kCpuPeriodUs / 1000, 1000)) + " " +
         std::to_string(kCpuPeriodUs);
}

std::string memory_max_value(int64_t memory_mib) {
  if (memory_mib <= 0) return "max";
  return std::to_string(memory_mib * 1024 * 1024);
}

std::string cgroup2_mount(const std::string& mountinfo_text) {
  // "36 25 0:31 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw": the fs type follows " - ".
  std::istringstream in(mountinfo_text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream after(line.substr(sep + 3));
    std::string type;
    after >> type;
    if (type != "cgroup2") continue;
    std::istringstream before(line.substr(0, sep));
    std::string field;
    std::vector<std::string> fields;
    while (before >> field) fields.push_back(field);
    if (fields.size() >= 5) return fields[4];
  }
  return {};
}

Result<std::unique_ptr<Cgroups>> Cgroups::create(const CgroupOptions& options, std::string* skip) {
  if (options.mode == "off") {
    *skip = "cgroups off (--cgroups off): CPU and memory requests are not enforced";
    return std::unique_ptr<Cgroups>();
  }
  if (options.mode != "auto" && options.mode != "on")
    return Error{"bad --cgroups \"" + options.mode + "\" (want auto, on or off)"};
  std::string root = options.root;
  std::string why;
  if (root.empty()) {
    const std::string mount = cgroup2_mount(read_text(options.mountinfo));
    if (mount.empty())
      why = "no cgroup2 file system is mounted";
    else
      root = mount + "/sluice";
  }
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (why.empty()) why = setup_root(root);
  if (why.empty()) return std::unique_ptr<Cgroups>(new Cgroups(root));
  if (options.mode == "on") return Error{"--cgroups on: " + why};
  *skip = "no cgroup limits for pods (" + why + "); CPU and memory requests are not enforced";
  return std::unique_ptr<Cgroups>();
}

std::string Cgroups::dir(proto::PodRef ref) const {
  return root_ + "/" + std::to_string(ref.job) + "-" + std::to_string(ref.pod);
}

Result<int> Cgroups::prepare(proto::PodRef ref, int64_t cpu_milli, int64_t memory_mib) {
  const std::string d = dir(ref);
  {
    std::lock_guard lock(mu_);
    busy_.erase(ref);  // runs again: its old group (if still there) is reused
  }
  if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
    return Error{"cannot create cgroup " + d + ": " + std::strerror(errno)};
  if (auto why = write_control(d + "/cpu.max", cpu_max_value(cpu_milli)); !why.empty())
    return Error{why};
  if (auto why = write_control(d + "/memory.max", memory_max_value(memory_mib)); !why.empty())
    return Error{why};
  const std::string procs = d + "/cgroup.procs";
  const int fd = ::open(procs.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot open " + procs + ": " + std::strerror(errno)};
  return fd;
}

bool Cgroups::remove(proto::PodRef ref) {
  const std::string d = dir(ref);
  struct stat st {};
  if (::stat(d.c_str(), &st) != 0) return true;
  // Processes that escaped the pod's process group (setsid, daemons) are still in its group.
  if (::access((d + "/cgroup.kill").c_str(), F_OK) == 0) write_control(d + "/cgroup.kill", "1");
  return ::rmdir(d.c_str()) == 0 || errno == ENOENT;
}

void Cgroups::release(proto::PodRef ref) {
  if (remove(ref)) return;
  std::lock_guard lock(mu_);
  busy_.emplace(ref, 1);
}

size_t Cgroups::sweep(std::vector<std::string>* gave_up) {
  std::map<proto::PodRef, int> todo;
  {
    std::lock_guard lock(mu_);
    todo.swap(busy_);
  }
  std::map<proto::PodRef, int> left;
  for (const auto& [ref, tries] : todo) {
    if (remove(ref)) continue;
    if (tries + 1 < kRemoveTries) {
      left.emplace(ref, tries + 1);
    } else if (gave_up) {
      gave_up->push_back(dir(ref));
    }
  }
  std::lock_guard lock(mu_);
  busy_.insert(left.begin(), left.end());
  return busy_.size();
}

}  // namespace sluice::agent
