#pragma once
// The environment of a pod's process (docs/api.md, "What a pod's process gets").
#include <string>
#include <vector>

#include "proto/protocol.h"

namespace sluice::agent {

struct PodContext {
  std::string node;             // SLUICE_NODE
  std::string agent_url;        // SLUICE_AGENT_URL
  std::string checkpoint_file;  // SLUICE_CHECKPOINT_FILE
  // SLUICE_CHECKPOINT_TOKEN: the bearer token of this pod's own checkpoint report, nothing more.
  std::string checkpoint_token;
  // SLUICE_GPU_USE_FILE: where a pod on fake GPUs writes its simulated use ("USED_MIB
  // UTIL_PCT", gpu.h: parse_gpu_use); "": not set.
  std::string gpu_use_file;
  // A pod that runs as another user (the agent is root) starts from a minimal environment,
  // not the agent's: HOME (its work dir), USER/LOGNAME, SHELL, a standard PATH, and only the
  // locale and time zone variables of the agent's own.
  bool minimal = false;
  // A directory whose `srun` runs `sluice srun` (a job step: docs/cli.md, "Job steps"), put
  // first on the pod's PATH; empty: none.
  std::string step_bin;
  std::string home;
  std::string user;
};

// The PATH of a pod that starts from the minimal environment.
inline constexpr const char* kPodDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// "KEY=VALUE" entries, sorted by key, each key once. Layers, later ones win:
//   1. the agent's own environment (`base`, e.g. environ), without SLUICE_* (the join token must
//      not reach jobs) and without CUDA_VISIBLE_DEVICES; with ctx.minimal only LANG, LANGUAGE,
//      LC_* and TZ of it, plus PATH, HOME, USER, LOGNAME and SHELL for the pod's user;
//   2. the job's env;
//   3. the variables sluice sets (CUDA_VISIBLE_DEVICES, SLUICE_*): a job cannot override them;
//      ctx.step_bin goes first on PATH.
std::vector<std::string> compose_pod_env(const proto::Assignment& a, const PodContext& ctx,
                                         const char* const* base);

}  // namespace sluice::agent
