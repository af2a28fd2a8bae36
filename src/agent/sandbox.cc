#include "agent/sandbox.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "agent/spawn.h"

namespace sluice::agent {
namespace fs = std::filesystem;

std::vector<std::string> bwrap_argv(const std::string& bwrap, const SandboxPaths& paths,
                                    const std::vector<int32_t>& gpus) {
  std::vector<std::string> a = {bwrap};
  auto add = [&a](std::initializer_list<std::string> args) { a.insert(a.end(), args); };
  add({"--ro-bind", "/", "/"});                     // the host, read-only
  add({"--dev", "/dev"});                           // null, zero, random, tty, pts, shm
  add({"--proc", "/proc"});                         // of its own PID namespace
  add({"--tmpfs", "/tmp", "--tmpfs", "/var/tmp"});  // private
  add({"--tmpfs", paths.state_dir});                // other pods' files, pods.json: gone
  add({"--bind", paths.work_dir, paths.work_dir});
  if (!paths.start_dir.empty()) add({"--bind", paths.start_dir, paths.start_dir});
  add({"--chdir", paths.start_dir.empty() ? paths.work_dir : paths.start_dir});
  add({"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"});
  // The pod's GPUs only. The -try forms skip nodes a machine lacks (a CPU-only or fake node).
  if (!gpus.empty()) {
    for (const char* dev :
         {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"})
      add({"--dev-bind-try", dev, dev});
    for (int32_t g : gpus) {
      const std::string dev = "/dev/nvidia" + std::to_string(g);
      add({"--dev-bind-try", dev, dev});
    }
  }
  add({"--"});
  return a;
}

namespace {
// `path` normalised, without a trailing slash ("/" stays "/").
std::string normal(const std::string& path) {
  std::string s = fs::path(path).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}
// `a` is `b` or lies below it.
bool within(const std::string& a, const std::string& b) {
  return a == b || b == "/" ||
         (a.size() > b.size() && a.compare(0, b.size(), b) == 0 && a[b.size()] == '/');
}
}  // namespace

std::string sandbox_reserved(const std::string& dir, const std::string& state_dir) {
  const std::string d = normal(dir);
  for (const char* own : {"/proc", "/dev", "/sys"})
    if (within(d, own) || within(own, d)) return std::string(own) + " is the sandbox's own";
  for (const char* own : {"/tmp", "/var/tmp"})
    if (within(own, d)) return std::string(own) + " is the sandbox's own";
  if (!state_dir.empty() && (within(d, normal(state_dir)) || within(normal(state_dir), d)))
    return "it holds the agent's state directory";
  return "";
}

std::string find_bwrap(const std::string& name_or_path) {
  const char* path = std::getenv("PATH");
  auto found = find_executable(name_or_path, path ? path : "");
  return found && ::access(found->c_str(), X_OK) == 0 ? *found : "";
}

}  // namespace sluice::agent
