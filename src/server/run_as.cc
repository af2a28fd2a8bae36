#include "server/run_as.h"

#include <algorithm>
#include <cctype>

namespace sluice::server {
namespace {

std::string id_list(int64_t own, const std::vector<int64_t>& extra) {
  std::string out;
  if (own >= 0) out = std::to_string(own);
  for (int64_t v : extra) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out.empty() ? "none" : out;
}

bool may_use(int64_t id, int64_t own, const std::vector<int64_t>& extra) {
  return id == own || std::find(extra.begin(), extra.end(), id) != extra.end();
}

bool queue_allows_root(const Job& job, const Config& config) {
  auto lq = config.local_queue_of(job);
  if (!lq) return false;
  const auto cq = config.local_queues[static_cast<size_t>(*lq)].cluster_queue;
  return config.cluster_queues[static_cast<size_t>(cq)].allow_root_pods;
}

// A unix id as a decimal: 1 .. 2^32-2 (0, root, is never taken from a client).
int64_t unix_id(const std::string& text) {
  if (text.empty() || text.size() > 10) return -1;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v > 0 && v < 4294967295LL ? v : -1;
}

}  // namespace

ClaimedUser claimed_user(const std::string& name, const std::string& uid, const std::string& gid) {
  ClaimedUser out;
  // A login name: letters, digits, '.', '_', '-', at most 64 bytes (it is printed and filtered on).
  const bool ok =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  if (ok) out.name = name;
  out.uid = unix_id(uid);
  out.gid = out.uid >= 0 ? unix_id(gid) : -1;
  return out;
}

std::string implied_namespace(const Caller& caller) {
  if (!caller.admin && caller.namespaces.size() == 1 && caller.namespaces[0] != "*")
    return caller.namespaces[0];
  return "default";
}

std::string resolve_run_as(Job& job, const Caller& caller, const Config& config) {
  const UnixIdentity& me = caller.unix_id;
  JobExec& x = job.exec_mut();  // who runs it: what this resolves
  const std::string who = "token " + caller.name;
  // 1. What the manifest asks for, if the token allows it.
  if (x.run_as_uid >= 0 && !caller.admin && !may_use(x.run_as_uid, me.uid, me.run_as_users))
    return who + " may not run pods as uid " + std::to_string(x.run_as_uid) +
           " (securityContext.runAsUser; allowed: " + id_list(me.uid, me.run_as_users) + ")";
  if (x.run_as_gid >= 0 && !caller.admin && !may_use(x.run_as_gid, me.gid, me.run_as_groups))
    return who + " may not run pods as gid " + std::to_string(x.run_as_gid) +
           " (securityContext.runAsGroup; allowed: " + id_list(me.gid, me.run_as_groups) + ")";
  // 2. Else the token's own ids.
  const bool asked_uid = x.run_as_uid >= 0;
  if (!asked_uid) x.run_as_uid = me.uid;
  if (x.run_as_gid < 0) x.run_as_gid = !asked_uid && me.gid >= 0 ? me.gid : x.run_as_uid;
  if (x.run_as_uid < 0) {
    if (x.run_as_gid >= 0 && me.gid != x.run_as_gid)
      return "securityContext.runAsGroup needs a runAsUser (" + who + " has no uid)";
    x.run_as_gid = -1;  // the agent's per-namespace ids
  }
  // 3. Root only where the queue allows it.
  if ((x.run_as_uid == 0 || x.run_as_gid == 0) && !queue_allows_root(job, config))
    return "pods may not run as root (uid " + std::to_string(x.run_as_uid) + ", gid " +
           std::to_string(x.run_as_gid) + "): the ClusterQueue of LocalQueue " + job.namespace_ +
           "/" + job.queue + " does not set spec.sluice.allowRootPods";
  x.user = caller.name;
  return {};
}

void set_pod_identity(proto::Assignment& as, const Job& job, const Admission& admission, size_t pod,
                      const Config& config) {
  const JobExec& x = job.exec();
  as.user = x.user;
  as.run_as_uid = x.run_as_uid;
  as.run_as_gid = x.run_as_gid;
  as.allow_root = config.cluster_queues[static_cast<size_t>(admission.queue)].allow_root_pods;
  as.working_dir = x.working_dir;
  as.submitter_uid = x.submitter_uid;
  as.submitter_gid = x.submitter_gid;
  if (pod >= admission.placement.pods.size()) return;
  const auto set = static_cast<size_t>(admission.placement.pods[pod].pod_set);
  if (set >= job.pod_sets.size()) return;
  as.cpu_milli = job.pod_sets[set].requests[kCpu];
  as.memory_mib = job.pod_sets[set].requests[kMemory];
  as.image = job.pod_sets[set].exec().image;
  as.image_args_only = job.pod_sets[set].exec().image_args_only;
  as.image_on_host = config.cluster_queues[static_cast<size_t>(admission.queue)].run_images_on_host;
}

}  // namespace sluice::server
