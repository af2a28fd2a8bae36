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

#include "core/cycle/decisions.h"
#include "core/model/config.h"
#include "core/model/job.h"
#include "proto/protocol.h"
#include "server/auth.h"

namespace sluice::server {

// Sets job.user, job.run_as_uid and job.run_as_gid. Returns "" or why the caller may not
// submit it (a 403).
std::string resolve_run_as(Job& job, const Caller& caller, const Config& config);

// What the agent needs to run pod `pod` of admitted `job` as someone and within its requests:
// run_as_uid/gid, user, allow_root (its ClusterQueue's), cpu_milli and memory_mib.
void set_pod_identity(proto::Assignment& as, const Job& job, const Admission& admission, size_t pod,
                      const Config& config);

}  // namespace sluice::server
