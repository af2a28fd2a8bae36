#include "server/pod_launch.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/model/job_control.h"

namespace sluice::server {

namespace {

const PodSet* set_of(const Job& job, const Admission& admission, size_t pod) {
  if (pod >= admission.placement.pods.size()) return nullptr;
  const auto s = static_cast<size_t>(admission.placement.pods[pod].pod_set);
  return s < job.pod_sets.size() ? &job.pod_sets[s] : nullptr;
}

// The launcher's variables of a gang (step 2 of pod_command_env).
void add_gang_env(const Job& job, const Admission& admission, size_t pod,
                  const std::vector<proto::PeerPod>& peers, int32_t master_port,
                  std::map<std::string, std::string>& env) {
  const int32_t rank = pod_rank(admission, pod);
  std::string master;
  for (size_t i = 0; i < peers.size(); ++i)
    if (pod_rank(admission, i) == 0)
      master = peers[i].address.empty() ? peers[i].node : address_host(peers[i].address);
  const std::string world = std::to_string(
      admission.placement.pods.empty() ? job.pod_count()
                                       : static_cast<int32_t>(admission.placement.pods.size()));
  auto put = [&](const char* key, const std::string& value) { env.try_emplace(key, value); };
  put("MASTER_ADDR", master);
  put("MASTER_PORT", std::to_string(master_port));
  put("WORLD_SIZE", world);
  put("RANK", std::to_string(rank));
  // A pod is one "node" to torch, as a Kubernetes pod is: one process, its own GPUs (device 0 is
  // the first of CUDA_VISIBLE_DEVICES), however many pods share a machine.
  put("NODE_RANK", std::to_string(rank));
  put("LOCAL_RANK", "0");
  put("PET_MASTER_ADDR", master);
  put("PET_MASTER_PORT", std::to_string(master_port));
  put("PET_NNODES", world);
  put("PET_NODE_RANK", std::to_string(rank));
  if (job.exec().gang_env != GangEnv::kMpi) return;
  const PodSet* set = set_of(job, admission, pod);
  put("K_MPI_JOB_ROLE", set && set->name == "launcher" ? "launcher" : "worker");
  // The hostfile an OpenMPI launcher reads (mpirun --hostfile): one line per worker pod.
  std::string hosts;
  for (size_t i = 0; i < peers.size(); ++i) {
    const PodSet* s = set_of(job, admission, i);
    if (s && s->name == "launcher") continue;
    hosts +=
        (peers[i].address.empty() ? peers[i].node : address_host(peers[i].address)) + " slots=1\n";
  }
  put("SLUICE_HOSTFILE", hosts);
}

// Slurm's view of the run: every pod is one task on its node (SLURM_PROCID its rank), the nodes
// the run's pods are on, in rank order without repeats, the CPUs of its pod set.
void add_slurm_tasks(const Job& job, const Admission& admission, size_t pod,
                     const std::vector<proto::PeerPod>& peers,
                     std::map<std::string, std::string>& env) {
  auto put = [&](const std::string& key, const std::string& value) { env.try_emplace(key, value); };
  std::vector<std::pair<int32_t, std::string>> by_rank;
  for (size_t i = 0; i < peers.size(); ++i)
    by_rank.emplace_back(pod_rank(admission, i), peers[i].node);
  std::sort(by_rank.begin(), by_rank.end());
  std::vector<std::string> nodes;
  for (const auto& [rank, node] : by_rank)
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ",") + n;
  const std::string here = pod < peers.size() ? peers[pod].node : "";
  const auto node_id = std::find(nodes.begin(), nodes.end(), here) - nodes.begin();
  put("SLURM_NTASKS", std::to_string(peers.empty() ? job.pod_count() : peers.size()));
  put("SLURM_PROCID", std::to_string(pod_rank(admission, pod)));
  put("SLURM_LOCALID", "0");
  put("SLURM_NNODES", std::to_string(nodes.size()));
  put("SLURM_JOB_NUM_NODES", std::to_string(nodes.size()));
  put("SLURM_NODEID", std::to_string(node_id));
  put("SLURM_NODELIST", list);
  put("SLURM_JOB_NODELIST", list);
  if (const PodSet* set = set_of(job, admission, pod); set && set->requests[kCpu] >= 1000)
    put("SLURM_CPUS_PER_TASK", std::to_string(set->requests[kCpu] / 1000));
  if (!job.exec().working_dir.empty()) put("SLURM_SUBMIT_DIR", job.exec().working_dir);
}

// Step 4 of pod_command_env: what a Slurm user's script reads.
void add_slurm_env(const Job& job, const Admission& admission, size_t pod,
                   const std::vector<proto::PeerPod>& peers,
                   std::map<std::string, std::string>& env) {
  auto put = [&](const std::string& key, const std::string& value) { env.try_emplace(key, value); };
  put("SLURM_JOB_ID", std::to_string(job.id));
  put("SLURM_JOB_NAME", job.name);
  add_slurm_tasks(job, admission, pod, peers, env);
  if (job.exec().array_task < 0) return;
  std::vector<std::pair<std::string, std::string>> vars = {
      {"ARRAY_JOB_ID", std::to_string(job.exec().array_job)},
      {"ARRAY_TASK_ID", std::to_string(job.exec().array_task)}};
  if (auto spec = parse_array_spec(job.exec().array); spec && !spec->tasks.empty()) {
    vars.emplace_back("ARRAY_TASK_COUNT", std::to_string(spec->tasks.size()));
    vars.emplace_back("ARRAY_TASK_MIN", std::to_string(spec->tasks.front()));
    vars.emplace_back("ARRAY_TASK_MAX", std::to_string(spec->tasks.back()));
  }
  for (const auto& [k, v] : vars) {
    put("SLURM_" + k, v);
    put("SLUICE_" + k, v);
  }
}

}  // namespace

std::string expand_file_pattern(const std::string& pattern, const Job& job, int32_t node,
                                int32_t task) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    switch (const char c = pattern[++i]) {
      case 'j':
        out += std::to_string(job.id);
        break;
      case 'A':
        out += std::to_string(job.exec().array_task >= 0 ? job.exec().array_job : job.id);
        break;
      case 'a':
        out += std::to_string(job.exec().array_task >= 0 ? job.exec().array_task : 0);
        break;
      case 'x':
        out += job.name;
        break;
      case 'u':
        out += job.exec().user;
        break;
      case 'n':
        out += std::to_string(node);
        break;
      case 't':
        out += std::to_string(task);
        break;
      case '%':
        out += '%';
        break;
      default:
        out += '%';
        out += c;
    }
  }
  return out;
}

int32_t pod_rank(const Admission& admission, size_t pod) {
  if (pod >= admission.placement.pods.size()) return static_cast<int32_t>(pod);
  const auto& pp = admission.placement.pods[pod];
  // Pods of earlier pod sets as placed (a fallback shape or partial admission runs fewer than
  // the job's counts).
  int32_t rank = pp.pod_index;
  for (const auto& other : admission.placement.pods)
    if (other.pod_set < pp.pod_set) ++rank;
  return rank;
}

std::string address_host(const std::string& address) {
  std::string rest = address;
  if (auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    return close == std::string::npos ? rest.substr(1) : rest.substr(1, close - 1);
  }
  if (auto colon = rest.rfind(':'); colon != std::string::npos) rest = rest.substr(0, colon);
  return rest;
}

int32_t MasterPorts::pick(JobId job, const std::set<int32_t>& used_on_node) {
  const auto start = static_cast<int32_t>(job % static_cast<JobId>(kCount));
  for (int32_t k = 0; k < kCount; ++k) {  // bounded: kCount candidates
    const int32_t port = kFirst + (start + k) % kCount;
    if (!used_on_node.count(port)) return port;
  }
  return kFirst + start;  // every port taken on one node: share (not reached in practice)
}

void pod_command_env(const Job& job, const Admission& admission, size_t pod,
                     const std::vector<proto::PeerPod>& peers, int32_t master_port,
                     int32_t completion, proto::Assignment& as) {
  const PodSet* set = set_of(job, admission, pod);
  as.command = set && !set->exec().command.empty() ? set->exec().command : job.exec().command;
  for (const auto& [k, v] : job.exec().env) as.env[k] = v;
  if (set)
    for (const auto& [k, v] : set->exec().env) as.env[k] = v;
  if (job.exec().gang_env != GangEnv::kNone)
    add_gang_env(job, admission, pod, peers, master_port, as.env);
  if (completion >= 0) {
    as.env["JOB_COMPLETION_INDEX"] = std::to_string(completion);
  } else if (set && set->indexed_group > 0 && pod < admission.placement.pods.size()) {
    as.env["JOB_COMPLETION_INDEX"] =
        std::to_string(admission.placement.pods[pod].pod_index % set->indexed_group);
  }
  add_slurm_env(job, admission, pod, peers, as.env);
  const auto node_id = as.env.find("SLURM_NODEID");
  const int32_t node = node_id == as.env.end() ? 0 : std::atoi(node_id->second.c_str());
  const int32_t task = pod_rank(admission, pod);
  if (!job.exec().output.empty())
    as.output_path = expand_file_pattern(job.exec().output, job, node, task);
  if (!job.exec().error.empty())
    as.error_path = expand_file_pattern(job.exec().error, job, node, task);
  as.tty = job.exec().tty;
}

}  // namespace sluice::server
