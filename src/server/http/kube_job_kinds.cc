// JobSet, PyTorchJob and MPIJob through the Kubernetes API (docs/kubernetes.md, "JobSet,
// PyTorchJob and MPIJob"). A create goes through the batch/v1 Job's path (kube_batch.cc: the
// native submission's parse, checks and commit; the readers of these kinds, src/config/jobs);
// the job keeps its kind, apiVersion and spec as submitted with its metadata (kube_meta.h), so
// that it shows as that kind: its spec as written, its status from its record (JobSet's
// conditions and terminalState; the Kubeflow operators' Created, Running, Succeeded, Failed and
// replicaStatuses). As every job, it is also a batch/v1 Job and a Workload.
#include <cctype>

#include "server/http/kube.h"
#include "server/http/kube_meta.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

namespace {

bool is_jobset(const Kind& k) {
  return k.kind == "JobSet";
}

// The Kubeflow operators' conditions: Created, then Running once admitted, Succeeded or Failed
// at the end; Suspended while it waits (as runPolicy.suspend under Kueue).
json kubeflow_conditions(const JobRecord& r, const std::string& kind) {
  const std::string what = kind + " " + r.job.namespace_ + "/" + r.job.name;
  json out = json::array();
  out.push_back(
      condition("Created", true, r.job.submit_ns, kind + "Created", what + " is created."));
  if (r.state == JobState::kPending) {
    out.push_back(condition("Suspended", true, r.queued_ns, kind + "Suspended",
                            what + (r.held ? " is held by a user." : " waits for admission.")));
    return out;
  }
  if (r.admit_ns > 0)
    out.push_back(condition("Running", r.state == JobState::kRunning, r.admit_ns, kind + "Running",
                            what + " is running."));
  if (r.state == JobState::kSucceeded)
    out.push_back(condition("Succeeded", true, r.end_ns, kind + "Succeeded",
                            what + " successfully completed."));
  if (r.state == JobState::kFailed || r.state == JobState::kRejected)
    out.push_back(condition("Failed", true, r.end_ns, kind + "Failed", r.reason));
  return out;
}

// Per pod set (a replicated job; a role, capitalised as the Kubeflow operators key it: Master,
// Worker, Launcher): its pods active, succeeded and failed in the last run.
json role_counts(const JobRecord& r, bool roles) {
  json out = json::object();
  size_t i = 0;
  for (const auto& ps : r.job.pod_sets) {
    int64_t active = 0, succeeded = 0, failed = 0;
    for (int32_t n = 0; n < ps.count && i < r.pods.size(); ++n, ++i) {
      const PodRun& p = r.pods[i];
      const bool ok = p.exit.exit_code == 0 && p.exit.signal == 0;
      if (!p.exited && r.state == JobState::kRunning) ++active;
      if (p.exited) ++(ok ? succeeded : failed);
    }
    std::string name = ps.name;
    if (roles && !name.empty())
      name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
    out[name] = {{"active", active}, {"succeeded", succeeded}, {"failed", failed}};
  }
  return out;
}

json jobset_status(const JobRecord& r) {
  json conditions = json::array();
  json status = {{"restarts", std::max(0, r.attempts - 1)}};
  if (r.state == JobState::kPending)
    conditions.push_back(condition("Suspended", true, r.queued_ns, "SuspendedJobs",
                                   r.held ? "held by a user" : "waiting for admission"));
  if (r.state == JobState::kSucceeded) {
    conditions.push_back(condition("Completed", true, r.end_ns, "AllJobsCompleted",
                                   "jobset completed successfully"));
    status["terminalState"] = "Completed";
  }
  if (r.state == JobState::kFailed || r.state == JobState::kRejected) {
    conditions.push_back(condition("Failed", true, r.end_ns, "FailedJobs", r.reason));
    status["terminalState"] = "Failed";
  }
  json replicated = json::array();
  const json roles = role_counts(r, false);  // a named object: items() refers to it
  for (const auto& [name, c] : roles.items())
    replicated.push_back({{"name", name},
                          {"active", c["active"]},
                          {"succeeded", c["succeeded"]},
                          {"failed", c["failed"]},
                          {"ready", c["active"]},
                          {"suspended", r.state == JobState::kPending ? 1 : 0}});
  status["conditions"] = std::move(conditions);
  status["replicatedJobsStatus"] = std::move(replicated);
  return status;
}

json kubeflow_status(const JobRecord& r, const std::string& kind) {
  json status = {{"conditions", kubeflow_conditions(r, kind)},
                 {"replicaStatuses", role_counts(r, true)}};
  if (r.admit_ns > 0 && r.state != JobState::kPending) status["startTime"] = timestamp(r.admit_ns);
  if (is_terminal(r.state) && r.end_ns > 0) status["completionTime"] = timestamp(r.end_ns);
  return status;
}

}  // namespace

bool job_kind(const Kind& k) {
  return k.kind == "JobSet" || k.kind == "PyTorchJob" || k.kind == "MPIJob";
}

bool created_as(const JobRecord& r, const Kind& k) {
  return !r.kube_meta.empty() && kept_meta(r.kube_meta).kind == k.kind;
}

json kind_object(const JobRecord& r, const Kind& k) {
  const KeptMeta kept = kept_meta(r.kube_meta);
  json labels = kept.labels;
  labels["sluice.dev/job-id"] = std::to_string(r.job.id);
  json annotations = kept.annotations;
  annotations["sluice.dev/state"] = state_name(r.state);
  annotations["sluice.dev/cluster-queue"] = r.cluster_queue;
  std::string lower = k.kind;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  json m = {{"name", r.job.name},
            {"namespace", r.job.namespace_},
            {"uid", "sluice-" + lower + "-" + std::to_string(r.job.id)},
            {"resourceVersion", std::to_string(r.rv)},
            {"generation", 1},
            {"creationTimestamp", time_field(r.job.submit_ns)},
            {"labels", std::move(labels)},
            {"annotations", std::move(annotations)}};
  json spec = kept.spec.is_object() ? kept.spec : json::object();
  // Suspended while it waits, as Kueue suspends a queued JobSet or Kubeflow job.
  if (is_jobset(k))
    spec["suspend"] = r.state == JobState::kPending;
  else
    spec["runPolicy"]["suspend"] = r.state == JobState::kPending;
  return {{"apiVersion", k.api_version()},
          {"kind", k.kind},
          {"metadata", std::move(m)},
          {"spec", std::move(spec)},
          {"status", is_jobset(k) ? jobset_status(r) : kubeflow_status(r, k.kind)}};
}

json shown_job(const JobRecord& r, const Kind& k, const Config& config, TimeNs now) {
  if (!job_kind(k)) return job_object(r, config, now);
  return created_as(r, k) ? kind_object(r, k) : json();
}

JobShape job_shape(const Kind& k) {
  return {
      .api_version = k.api_version(), .kind = k.kind, .run_policy = job_kind(k) && !is_jobset(k)};
}

const std::vector<Column>& kind_columns(const Kind& k) {
  // JobSet's printer columns; the Kubeflow training operator's (State: the last condition).
  static const std::vector<Column> jobset = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"TerminalState", "string", "", "Final state of JobSet"},
      {"Restarts", "string", "", "Number of restarts"},
      {"Completed", "string", "", ""},
      {"Suspended", "string", "", "JobSet suspended"},
      {"Age", "date", "", "Time this JobSet was created"}};
  static const std::vector<Column> kubeflow = {
      {"Name", "string", "name", "Name must be unique within a namespace."},
      {"State", "string", "", ""},
      {"Age", "date", "", "CreationTimestamp of the object."}};
  return is_jobset(k) ? jobset : kubeflow;
}

json kind_row(const JobRecord& r, const Kind& k, const json& o, TimeNs now) {
  const json& st = o["status"];
  const std::string age = human_duration(now - r.job.submit_ns);
  if (!is_jobset(k)) return json::array({r.job.name, st["conditions"].back()["type"], age});
  std::string completed;
  for (const auto& c : st["conditions"])
    if (c["type"] == "Completed") completed = c["status"];
  return json::array({r.job.name, st.value("terminalState", ""),
                      std::to_string(st["restarts"].get<int64_t>()), completed,
                      o["spec"]["suspend"].get<bool>() ? "true" : "false", age});
}

}  // namespace kube

// GET of JobSets, PyTorchJobs, MPIJobs: the jobs created as that kind.
void Server::kube_kind_jobs(const kube::Call& c, net::Response& res) {
  const auto now = now_ns();
  const auto& columns = kube::kind_columns(*c.kind);
  json out;
  {
    std::lock_guard lk(state_->mu());
    if (!c.path.name.empty()) {
      const JobRecord* r = kube_job_named(c.path.ns, c.path.name);
      if (!r || !kube::created_as(*r, *c.kind))
        return reply(res, 404, kube::not_found(c, c.path.name));
      json o = kube::kind_object(*r, *c.kind);
      json cells = kube::kind_row(*r, *c.kind, o, now);
      out = kube::single(c, columns, std::move(o), std::move(cells));
    } else {
      kube::Listing list(c, columns);
      const auto next = kube_scan(
          c, [&] { return list.full(); },
          [&](const JobRecord& r) {
            if (!kube::created_as(r, *c.kind)) return;
            json o = kube::kind_object(r, *c.kind);
            list.add(std::move(o), [&] { return kube::kind_row(r, *c.kind, o, now); });
          });
      out = list.done(c.kind->kind + "List", next, state_->journal().current());
    }
  }
  reply(res, 200, out);
}

}  // namespace sluice::server
