#include "agent/sandbox.h"

#include <unistd.h>

#include <cstdlib>

#include "agent/spawn.h"

namespace sluice::agent {

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
  if (!paths.tty) add({"--new-session"});  // no TIOCSTI into a terminal (sandbox.h)
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

std::string find_bwrap(const std::string& name_or_path) {
  const char* path = std::getenv("PATH");
  auto found = find_executable(name_or_path, path ? path : "");
  return found && ::access(found->c_str(), X_OK) == 0 ? *found : "";
}

}  // namespace sluice::agent
