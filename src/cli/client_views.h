#pragma once
// Human tables for the server's listings (docs/api.md: JobView, /v1/queues, /v1/nodes). Pure:
// JSON and the caller's clock in, text out, so the tests pin the exact output. Readers are
// lenient: a missing or null field prints "-", so a server that adds or omits a field never
// breaks the table (the JSON form, --json, shows everything as the server sent it).
#include <string>

#include <nlohmann/json.hpp>

namespace sluice::cli {

struct ViewOptions {
  double now_unix_s = 0;     // for AGE and LAST-SEEN
  bool wide = false;         // no truncation
  bool start = false;        // jobs: a START column (the pending jobs' predicted start)
  bool array_tasks = false;  // jobs: every pending array task on its own line (squeue -r)
};

// The jobs with each array's pending tasks as one entry whose id is squeue's
// "ARRAY_[3-7,9]" (at the place of the newest of them); other jobs as they are.
nlohmann::json collapse_pending_arrays(const nlohmann::json& jobs);

// {"jobs":[JobView...]} (or a bare array) -> ID NAME USER NAMESPACE QUEUE STATE GPUS AGE
// [START] NODE(S) REASON
std::string jobs_table(const nlohmann::json& reply, const ViewOptions& options);

// {"queues":[...]} -> NAME COHORT PENDING RUNNING GPU(USED/NOMINAL) BORROWED SHARE DEBT
std::string queues_table(const nlohmann::json& reply, const ViewOptions& options);

// {"local_queues":[...]} -> NAMESPACE QUEUE CLUSTERQUEUE PENDING RUNNING CQ PENDING
// CQ GPU USED/NOMINAL: the LocalQueues a user submits to, with their ClusterQueue's state.
std::string local_queues_table(const nlohmann::json& reply, const ViewOptions& options);

// {"nodes":[...]} -> NAME READY GPUS ALLOC MODEL LAST-SEEN
std::string nodes_table(const nlohmann::json& reply, const ViewOptions& options);

// One submission reply {"jobs":[{"id","name","queue"}]} -> "submitted job 17 (bert) to queue
// team-a" lines.
std::string submitted_text(const nlohmann::json& reply);

// The nodes of a job's placement, distinct, in pod order: "n1,n2"; more than `max_nodes`
// become "n1,n2,n3,+5".
std::string placement_nodes(const nlohmann::json& placement, std::size_t max_nodes);

// Unix seconds from a JSON time: seconds (number), or an ISO-8601/RFC 3339 UTC string
// ("2026-11-30T21:55:00Z", fractions allowed). Negative when absent or unreadable.
double unix_seconds(const nlohmann::json& value);

}  // namespace sluice::cli
