#include "agent/pod_env.h"

#include <map>

namespace sluice::agent {
namespace {

// What a pod that runs as another user keeps of the agent's environment: nothing that could
// hold a credential (tokens in *_TOKEN, cloud keys, proxy passwords), only presentation.
bool kept_in_minimal(const std::string& key) {
  return key == "LANG" || key == "LANGUAGE" || key == "TZ" || key.rfind("LC_", 0) == 0;
}

}  // namespace

std::vector<std::string> compose_pod_env(const proto::Assignment& a, const PodContext& ctx,
                                         const char* const* base) {
  std::map<std::string, std::string> env;
  for (const char* const* p = base; p && *p; ++p) {
    std::string kv(*p);
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string key = kv.substr(0, eq);
    if (key.rfind("SLUICE_", 0) == 0 || key == "CUDA_VISIBLE_DEVICES") continue;
    if (ctx.minimal && !kept_in_minimal(key)) continue;
    env[key] = kv.substr(eq + 1);
  }
  if (ctx.minimal) {
    env["PATH"] = kPodDefaultPath;
    env["HOME"] = ctx.home;
    env["USER"] = ctx.user;
    env["LOGNAME"] = ctx.user;
    env["SHELL"] = "/bin/sh";
  }
  for (const auto& [k, v] : a.env) {
    if (!k.empty() && k.find('=') == std::string::npos) env[k] = v;
  }
  if (!ctx.step_bin.empty()) {
    auto path = env.find("PATH");
    env["PATH"] = ctx.step_bin + (path == env.end() || path->second.empty()
                                      ? std::string(":") + kPodDefaultPath
                                      : ":" + path->second);
  }
  std::string devices;
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    devices += (i ? "," : "") + std::to_string(a.gpus[i]);
  }
  std::string peers;
  for (size_t i = 0; i < a.peers.size(); ++i) {
    peers += (i ? "," : "") + std::to_string(a.peers[i].pod) + "=" + a.peers[i].node;
  }
  // An empty CUDA_VISIBLE_DEVICES hides every GPU from a CPU-only pod, as intended.
  env["CUDA_VISIBLE_DEVICES"] = devices;
  env["SLUICE_JOB_ID"] = std::to_string(a.job);
  env["SLUICE_JOB_NAME"] = a.job_name;
  env["SLUICE_NAMESPACE"] = a.job_namespace;
  env["SLUICE_POD_INDEX"] = std::to_string(a.pod);
  env["SLUICE_RUN"] = std::to_string(a.attempt);
  env["SLUICE_GANG_SIZE"] = std::to_string(a.gang_size);
  env["SLUICE_PEERS"] = peers;
  env["SLUICE_NODE"] = ctx.node;
  env["SLUICE_AGENT_URL"] = ctx.agent_url;
  env["SLUICE_CHECKPOINT_FILE"] = ctx.checkpoint_file;
  if (!ctx.gpu_use_file.empty()) env["SLUICE_GPU_USE_FILE"] = ctx.gpu_use_file;
  if (!ctx.checkpoint_token.empty()) env["SLUICE_CHECKPOINT_TOKEN"] = ctx.checkpoint_token;
  if (!a.user.empty()) env["SLUICE_USER"] = a.user;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace sluice::agent
