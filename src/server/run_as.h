#pragma once
// Who a submitted job runs as (docs/api.md "Auth", docs/config.md "securityContext").
//
// The submitter is the token's name ("anonymous" without auth). Its pods run as:
//   - the securityContext's runAsUser/runAsGroup, when the token may ask for them: an admin
//     (or anyone with auth off) may ask for any; a member for its own uid/gid and the ids in
//     its runAsUsers/runAsGroups;
//   - else the token's uid/gid (gid defaults to the uid);
//   - else nothing (-1): the agent's uid for the job's namespace.
// uid or gid 0 needs a ClusterQueue with spec.sluice.allowRootPods.
#include <string>

#include "core/decision/decisions.h"
#include "core/model/config.h"
#include "core/model/job.h"
#include "proto/protocol.h"
#include "server/auth.h"

namespace sluice::server {

// Sets job.user, job.run_as_uid and job.run_as_gid. Returns "" or why the caller may not
// submit it (a 403).
std::string resolve_run_as(Job& job, const Caller& caller, const Config& config);

// Who the client says it is (X-Sluice-User, -Uid, -Gid), believed only by a server without
// tokens, which listens on loopback and treats every caller as an admin anyway: the jobs'
// submitter, and the ids a root agent may run them as (docs/agent.md, "Who a pod runs as").
// A malformed name is ignored (""); uid or gid 0 or malformed: -1.
struct ClaimedUser {
  std::string name;
  int64_t uid = -1;
  int64_t gid = -1;
};
ClaimedUser claimed_user(const std::string& name, const std::string& uid, const std::string& gid);

// The namespace of a job document that names none: a member token's only namespace, else
// "default".
std::string implied_namespace(const Caller& caller);

// What the agent needs to run pod `pod` of admitted `job` as someone and within its requests:
// run_as_uid/gid, user, allow_root (its ClusterQueue's), cpu_milli and memory_mib, the working
// directory and the submitter's ids.
void set_pod_identity(proto::Assignment& as, const Job& job, const Admission& admission, size_t pod,
                      const Config& config);

}  // namespace sluice::server
