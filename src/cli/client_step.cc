#include "cli/client_step.h"

#include <cctype>

namespace sluice::cli {

namespace {

bool read_positive(const std::string& v, int* out) {
  if (v.empty() || v.size() > 6) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::stoi(v);
  return *out > 0;
}

int env_int(const EnvMap& env, const char* key, int fallback) {
  auto it = env.find(key);
  int v = 0;
  return it != env.end() && read_positive(it->second, &v) ? v : fallback;
}

// A node's own values, never the batch pod's: its GPUs, its place in the job, its agent.
bool node_local(const std::string& key) {
  return key == "CUDA_VISIBLE_DEVICES" || key == "SLURM_NODEID" || key == "SLURMD_NODENAME" ||
         key == "SLURM_TOPOLOGY_ADDR" || key == "HOSTNAME" || key.rfind("SLUICE_", 0) == 0;
}

}  // namespace

std::optional<std::string> parse_srun_args(const std::vector<std::string>& words, SrunArgs& a) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string opt = words[i], value;
    bool has_value = false;
    if (opt == "--") {
      a.command.assign(words.begin() + static_cast<long>(i) + 1, words.end());
      break;
    }
    if (opt.empty() || opt[0] != '-') {
      a.command.assign(words.begin() + static_cast<long>(i), words.end());
      break;
    }
    if (opt == "--batch") {
      a.batch = true;
      continue;
    }
    if (opt.rfind("--", 0) == 0) {
      if (auto eq = opt.find('='); eq != std::string::npos) {
        value = opt.substr(eq + 1);
        opt = opt.substr(0, eq);
        has_value = true;
      }
    } else if (opt.size() > 2) {  // -n4
      value = opt.substr(2);
      opt = opt.substr(0, 2);
      has_value = true;
    }
    int* target = opt == "-n" || opt == "--ntasks"  ? &a.ntasks
                  : opt == "-N" || opt == "--nodes" ? &a.nodes
                  : opt == "--ntasks-per-node"      ? &a.ntasks_per_node
                                                    : nullptr;
    if (!target) return "srun: " + words[i] + " is not an srun option sluice knows";
    if (!has_value) {
      if (i + 1 == words.size()) return "srun: " + opt + " needs a value";
      value = words[++i];
    }
    if (!read_positive(value, target))
      return "srun: " + opt + " " + value + ": expected a positive whole number";
  }
  if (a.command.empty()) return std::string("srun: no command to run (srun [OPTIONS] CMD ...)");
  return std::nullopt;
}

std::optional<std::string> step_layout(const EnvMap& job_env, const SrunArgs& a, StepLayout& out) {
  // The job's pods are its nodes (with -N each on a node of its own).
  const int job_nodes = env_int(job_env, "SLUICE_GANG_SIZE", env_int(job_env, "SLURM_NNODES", 1));
  const int per_node = env_int(job_env, "SLURM_NTASKS_PER_NODE", 1);
  const int job_tasks = env_int(job_env, "SLURM_NTASKS", job_nodes * per_node);
  if (a.nodes > job_nodes)
    return "srun: -N " + std::to_string(a.nodes) + ": the job has " + std::to_string(job_nodes) +
           " node(s)";
  out.nodes = a.nodes > 0 ? a.nodes : job_nodes;
  const int each = a.ntasks_per_node > 0 ? a.ntasks_per_node : per_node;
  out.ntasks = a.ntasks > 0                           ? a.ntasks
               : a.nodes > 0 || a.ntasks_per_node > 0 ? out.nodes * each
                                                      : std::min(job_tasks, out.nodes * each);
  if (out.ntasks > out.nodes * each)
    return "srun: " + std::to_string(out.ntasks) + " tasks on " + std::to_string(out.nodes) +
           " node(s) of " + std::to_string(each) + " task(s) each: the job has " +
           std::to_string(job_tasks) + " task(s) on " + std::to_string(job_nodes) + " node(s)";
  // Block distribution: as many tasks per node as fit, node by node; fewer tasks than nodes
  // use fewer nodes.
  if (out.ntasks < out.nodes && a.nodes <= 0) out.nodes = out.ntasks;
  const int per = (out.ntasks + out.nodes - 1) / out.nodes;
  out.first.assign(static_cast<size_t>(out.nodes), 0);
  out.count.assign(static_cast<size_t>(out.nodes), 0);
  int next = 0;
  for (int n = 0; n < out.nodes; ++n) {
    const int c = std::min(per, out.ntasks - next);
    out.first[static_cast<size_t>(n)] = next;
    out.count[static_cast<size_t>(n)] = std::max(c, 0);
    next += std::max(c, 0);
  }
  return std::nullopt;
}

EnvMap task_env(const EnvMap& leader, const EnvMap& own, const StepLayout& layout, int node,
                int local, int step_id) {
  EnvMap env;
  for (const auto& [k, v] : leader)
    if (!node_local(k)) env[k] = v;
  for (const auto& [k, v] : own)
    if (node_local(k)) env[k] = v;
  env.erase("SLUICE_STEP_DIR");  // a task's own srun runs on its node only
  const int rank = layout.first[static_cast<size_t>(node)] + local;
  auto put = [&](const char* k, int v) { env[k] = std::to_string(v); };
  put("SLURM_PROCID", rank);
  put("SLURM_LOCALID", local);
  put("SLURM_STEP_ID", step_id);
  put("SLURM_STEPID", step_id);
  put("SLURM_STEP_NUM_TASKS", layout.ntasks);
  put("SLURM_STEP_NUM_NODES", layout.nodes);
  put("SLURM_NTASKS", layout.ntasks);
  put("SLURM_NPROCS", layout.ntasks);
  put("SLURM_NNODES", layout.nodes);
  put("SLURM_STEP_TASKS_PER_NODE", layout.count[static_cast<size_t>(node)]);
  if (env.count("RANK")) {  // torch's names (distributedEnv): one process per task
    put("RANK", rank);
    put("LOCAL_RANK", local);
    put("WORLD_SIZE", layout.ntasks);
  }
  return env;
}

nlohmann::json step_spec(const std::vector<std::string>& command, const EnvMap& env,
                         const std::string& cwd, const StepLayout& layout) {
  return {{"command", command},
          {"env", env},
          {"cwd", cwd},
          {"nodes", layout.nodes},
          {"ntasks", layout.ntasks},
          {"first", layout.first},
          {"count", layout.count}};
}

bool read_step_spec(const nlohmann::json& doc, std::vector<std::string>& command, EnvMap& env,
                    std::string& cwd, StepLayout& layout) {
  try {
    command = doc.at("command").get<std::vector<std::string>>();
    env = doc.at("env").get<EnvMap>();
    cwd = doc.at("cwd").get<std::string>();
    layout.nodes = doc.at("nodes").get<int>();
    layout.ntasks = doc.at("ntasks").get<int>();
    layout.first = doc.at("first").get<std::vector<int>>();
    layout.count = doc.at("count").get<std::vector<int>>();
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return !command.empty() && layout.nodes >= 1 &&
         layout.first.size() == static_cast<size_t>(layout.nodes) &&
         layout.count.size() == layout.first.size();
}

EnvMap env_map(const char* const* entries) {
  EnvMap env;
  for (const char* const* e = entries; e && *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace sluice::cli
