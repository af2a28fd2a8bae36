// `sluice up --demo` (up_demo.h).
#include "cli/up_demo.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cli/demo_assets.h"
#include "cli/serve_server.h"

namespace sluice::cli {

namespace {

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

bool run_demo(UpStatus& status, const sigset_t& set, server::Server& srv, int* rc) {
  std::printf(
      "demo: a preemptible sweep borrows the idle GPUs; team-a's urgent gang reclaims "
      "its quota; team-b reclaims; an interactive notebook must start within 30 s\n");
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
