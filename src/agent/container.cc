#include "agent/container.h"

#include <sstream>

namespace sluice::agent {

std::vector<std::string> split_runtime(const std::string& command) {
  std::vector<std::string> out;
  std::istringstream in(command);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

ContainerLaunch container_launch(const std::vector<std::string>& runtime,
                                 const proto::Assignment& a, const std::string& work_dir,
                                 const std::vector<std::string>& env,
                                 const std::optional<PodIdentity>& identity,
                                 const std::vector<std::string>& gpu_devices) {
  const std::string name = "sluice-" + std::to_string(a.job) + "-" + std::to_string(a.pod);
  ContainerLaunch out;
  out.argv = runtime;
  // --replace: a container of the same pod left by a killed agent goes first.
  for (const char* s : {"run", "--rm", "--replace", "--name"}) out.argv.push_back(s);
  out.argv.push_back(name);
  // An interactive pod: the runtime passes its terminal (the pod's pseudo-terminal) through.
  if (a.tty)
    for (const char* s : {"-i", "-t"}) out.argv.push_back(s);
  for (const char* s : {"--network", "host", "-v"}) out.argv.push_back(s);
  out.argv.push_back(work_dir + ":" + work_dir);
  out.argv.push_back("-w");
  out.argv.push_back(work_dir);
  if (identity) {
    out.argv.push_back("--user");
    out.argv.push_back(std::to_string(identity->uid) + ":" + std::to_string(identity->gid));
  }
  for (const auto& d : gpu_devices) {
    out.argv.push_back("--device");
    out.argv.push_back(d);
  }
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) continue;  // the image's
    out.argv.push_back("--env");
    out.argv.push_back(e);
  }
  // A Kubernetes `command` replaces the image's entrypoint; `args` alone follow it.
  if (!a.image_args_only && !a.command.empty()) {
    out.argv.push_back("--entrypoint");
    out.argv.push_back(a.command.front());
  }
  out.argv.push_back(a.image);
  out.cleanup = runtime;
  for (const char* s : {"rm", "-f", "--time", "0"}) out.cleanup.push_back(s);
  out.cleanup.push_back(name);
  return out;
}

}  // namespace sluice::agent
