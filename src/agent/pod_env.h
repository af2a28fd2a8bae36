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
};

// "KEY=VALUE" entries, sorted by key, each key once. Layers, later ones win:
//   1. the agent's own environment (`base`, e.g. environ), without SLUICE_* (the join token must
//      not reach jobs) and without CUDA_VISIBLE_DEVICES;
//   2. the job's env;
//   3. the variables sluice sets (CUDA_VISIBLE_DEVICES, SLUICE_*): a job cannot override them.
std::vector<std::string> compose_pod_env(const proto::Assignment& a, const PodContext& ctx,
                                         const char* const* base);

}  // namespace sluice::agent
