// `sluice up --demo` (up_demo.h).
#include "cli/up_demo.h"

#include <spawn.h>
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/demo_assets.h"
#include "cli/serve_server.h"

extern char** environ;

namespace sluice::cli {

namespace {

constexpr const char* kPoolCommand = "[examples/autoscale/local-agents.sh]";

std::string pool_dir(const std::string& data_dir) {
  return data_dir + "/demo-pool";
}

// The demo's job documents grouped by their submitTime offset (seconds).
std::map<double, std::vector<std::string>> demo_schedule() {
  std::map<double, std::vector<std::string>> out;
  for (const auto& doc : YAML::LoadAll(kDemoJobs)) {
    const double at = doc["spec"]["submitTime"].as<double>(0);
    YAML::Emitter e;
    e << doc;
    out[at].push_back(e.c_str());
  }
  return out;
}

}  // namespace

Result<std::string> demo_pool_config(const std::string& data_dir) {
  const std::string dir = pool_dir(data_dir), script = dir + "/local-agents.sh";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream(script, std::ios::trunc) << kDemoProvisioner;
  std::filesystem::permissions(script, std::filesystem::perms::owner_all, ec);
  if (!std::ifstream(script) || ec) return Error{"cannot write the demo's provisioner " + script};
  const auto q = [](const std::string& v) { return nlohmann::json(v).dump(); };
  std::string yaml = kDemoPool;
  const size_t at = yaml.find(kPoolCommand);
  if (at == std::string::npos) return Error{"the demo's pool names no provisioner"};
  yaml.replace(at, std::string(kPoolCommand).size(),
               "[env, " + q("SLUICE_BIN=" + self_exe()) + ", " + q("POOL_STATE_DIR=" + dir) + ", " +
                   q(script) + "]");
  return yaml;
}

void stop_demo_pool(const std::string& data_dir) {
  const std::string dir = pool_dir(data_dir);
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/demo", ec)) {
    if (f.path().extension() != ".pid") continue;
    const std::string node = f.path().stem().string(), script = dir + "/local-agents.sh";
    std::vector<std::string> args = {script, "delete", "demo", node};
    std::vector<std::string> env = {"SLUICE_BIN=" + self_exe(), "POOL_STATE_DIR=" + dir,
                                    "SLUICE_REASON=shutdown"};
    for (char** e = environ; e && *e; ++e) {  // this process's, less what is set above
      const std::string kv = *e, key = kv.substr(0, kv.find('=') + 1);
      if (key != "SLUICE_BIN=" && key != "POOL_STATE_DIR=" && key != "SLUICE_REASON=")
        env.push_back(kv);
    }
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    for (auto& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (::posix_spawn(&pid, script.c_str(), nullptr, nullptr, argv.data(), envp.data()) == 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);  // the script's own wait is bounded (10 s, then SIGKILL)
      std::printf("demo: pool node %s stopped\n", node.c_str());
    }
  }
}

bool run_demo(UpStatus& status, const sigset_t& set, server::Server& srv, int* rc) {
  std::printf(
      "demo: a preemptible sweep borrows the idle GPUs; team-a's urgent gang reclaims "
      "its quota; team-b reclaims; an interactive notebook must start within 30 s; a burst gang "
      "gets two nodes from a node pool (local agents a provisioner script starts), which go "
      "once idle\n");
  for (const auto& [at, docs] : demo_schedule()) {
    while (status.elapsed() < at) {
      if (wait_for_signal(set, std::min(1.0, at - status.elapsed()), srv) != 0) return false;
      status.print_if_changed();
    }
    for (const auto& d : docs) {
      auto r = status.client().post("/v1/jobs", d, "application/yaml");
      if (!r || r->status != 202) {
        std::printf("demo: submission failed: %s\n", r ? r->body.c_str() : "no answer");
        *rc = 1;
      }
    }
    std::printf("[%5.1fs] submitted %zu job(s)\n", status.elapsed(), docs.size());
  }
  return true;
}

}  // namespace sluice::cli
