// The Kubernetes objects a job record is (docs/kubernetes.md): its batch/v1 Job, one Pod per
// pod of its current (or last) run, and its Kueue Workload with Kueue's conditions. Built from
// the record alone (and the configuration's names): pure, so the unit tests build them too.
#include <algorithm>

#include "server/http/kube.h"
#include "server/http/kube_job_apply.h"
#include "server/http/kube_meta.h"

namespace sluice::server::kube {

namespace {

std::string uid(const char* what, const JobRecord& r) {
  return std::string("sluice-") + what + "-" + std::to_string(r.job.id);
}

// The pod set pod `i` of the run belongs to (pods are placed pod set by pod set).
size_t pod_set_of(const JobRecord& r, size_t i) {
  const auto& counts = r.admission ? r.admission->pod_set_counts : std::vector<int32_t>{};
  for (size_t s = 0; s < r.job.pod_sets.size(); ++s) {
    const auto n = static_cast<size_t>(s < counts.size() ? counts[s] : r.job.pod_sets[s].count);
    if (i < n) return s;
    i -= n;
  }
  return r.job.pod_sets.empty() ? 0 : r.job.pod_sets.size() - 1;
}

json container(const PodSet& ps, const Config& config) {
  json c = {{"name", ps.name}, {"resources", {{"requests", quantities(ps.requests, config)}}}};
  if (!ps.exec().image.empty()) c["image"] = ps.exec().image;
  if (!ps.exec().command.empty())
    c[ps.exec().image_args_only ? "args" : "command"] = ps.exec().command;
  return c;
}

json pod_template(const PodSet& ps, const Config& config, const json& labels) {
  return {
      {"metadata", {{"labels", labels}}},
      {"spec", {{"containers", json::array({container(ps, config)})}, {"restartPolicy", "Never"}}}};
}

// The Job's own labels (kube_meta.h), then those sluice sets, which win.
json job_labels(const JobRecord& r, const KeptMeta& kept) {
  json l = kept.labels;
  l["sluice.dev/job-id"] = std::to_string(r.job.id);
  if (!r.job.queue.empty()) l[kQueueLabel] = r.job.queue;
  if (!r.job.exec().priority_class.empty())
    l["kueue.x-k8s.io/priority-class"] = r.job.exec().priority_class;
  return l;
}

// What a Job's pods carry, and its selector matches.
json pod_labels(const JobRecord& r) {
  const std::string u = uid("job", r);
  return {{"batch.kubernetes.io/controller-uid", u},
          {"batch.kubernetes.io/job-name", r.job.name},
          {"controller-uid", u},
          {"job-name", r.job.name}};
}

// A Job's pod template's: its own (kube_meta.h), then those Kubernetes' Job controller sets.
json template_labels(const JobRecord& r, const KeptMeta& kept) {
  json l = kept.pod_labels;
  const json controller = pod_labels(r);  // a named object: items() refers to it
  for (const auto& [k, v] : controller.items()) l[k] = v;
  return l;
}

json meta(const std::string& name, const JobRecord& r, const std::string& u, TimeNs created,
          json labels) {
  return {{"name", name},
          {"namespace", r.job.namespace_},
          {"uid", u},
          {"resourceVersion", std::to_string(r.rv)},
          {"generation", 1},
          {"creationTimestamp", time_field(created)},
          {"labels", std::move(labels)}};
}

json owner(const JobRecord& r) {
  return json::array({{{"apiVersion", "batch/v1"},
                       {"kind", "Job"},
                       {"name", r.job.name},
                       {"uid", uid("job", r)},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

struct PodCounts {
  int64_t active = 0, ready = 0, succeeded = 0, failed = 0;
  TimeNs started_ns = 0;
};

PodCounts pod_counts(const JobRecord& r) {
  PodCounts c;
  for (const auto& p : r.pods) {
    if (p.started && !p.exited) ++c.active, ++c.ready;
    if (!p.started && !p.exited && r.state == JobState::kRunning) ++c.active;
    if (p.exited && p.exit.exit_code == 0 && p.exit.signal == 0) ++c.succeeded;
    if (p.exited && (p.exit.exit_code != 0 || p.exit.signal != 0)) ++c.failed;
    if (p.started && (c.started_ns == 0 || p.started_ns < c.started_ns))
      c.started_ns = p.started_ns;
  }
  if (r.job.exec().completions.total > 0) c.succeeded = static_cast<int64_t>(r.completed.size());
  return c;
}

json job_conditions(const JobRecord& r) {
  json out = json::array();
  switch (r.state) {
    case JobState::kPending:
      out.push_back(condition("Suspended", true, r.queued_ns, "JobSuspended",
                              r.held ? "held by a user" : "waiting for admission"));
      break;
    case JobState::kSucceeded:
      out.push_back(condition("SuccessCriteriaMet", true, r.end_ns, "CompletionsReached",
                              "Reached expected number of succeeded pods"));
      out.push_back(condition("Complete", true, r.end_ns, "CompletionsReached",
                              "Reached expected number of succeeded pods"));
      break;
    case JobState::kFailed:
    case JobState::kRejected:
      out.push_back(condition("FailureTarget", true, r.end_ns,
                              r.state == JobState::kRejected ? "Rejected" : "PodFailed", r.reason));
      out.push_back(condition("Failed", true, r.end_ns,
                              r.state == JobState::kRejected ? "Rejected" : "PodFailed", r.reason));
      break;
    default:
      break;
  }
  return out;
}

}  // namespace

json condition(const std::string& type, bool status, TimeNs at, const std::string& reason,
               const std::string& message) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"lastTransitionTime", time_field(at)},
          {"reason", reason},
          {"message", message}};
}

json quantities(const ResourceVec& v, const Config& config, int64_t times) {
  json out = json::object();
  for (int i = 0; i < config.resources.size(); ++i) {
    const auto id = static_cast<ResourceId>(i);
    if (v[id] != 0) out[config.resources.name(id)] = format_canonical(id, v[id] * times);
  }
  return out;
}

namespace {

// A Job kubectl apply created or last applied (its annotation kept with its metadata; a
// server-side apply's, kServerSideApplied, first): its
// spec's fields as the manifest wrote them (but spec.suspend, which is the job's), so that
// kubectl apply of the same manifest finds nothing to change (kube_job_apply.cc).
void applied_overlay(json& job, const KeptMeta& kept) {
  auto it = kept.annotations.find(kServerSideApplied);  // kubectl apply --server-side's
  if (it == kept.annotations.end()) it = kept.annotations.find(kLastApplied);
  if (it == kept.annotations.end() || !it->is_string()) return;
  const json m = parse_bounded(it->get_ref<const std::string&>());
  if (!m.is_object() || !m.contains("spec") || !m["spec"].is_object()) return;
  for (const auto& [k, v] : m["spec"].items())
    if (k != "suspend") job["spec"][k] = v;
}

}  // namespace

json job_object(const JobRecord& r, const Config& config, TimeNs now) {
  (void)now;
  const KeptMeta kept = kept_meta(r.kube_meta);
  const int32_t pods = r.job.pod_count();
  const PodSet empty;
  const PodSet& ps = r.job.pod_sets.empty() ? empty : r.job.pod_sets.front();
  json spec = {
      {"parallelism", pods},
      {"completions", r.job.exec().completions.total > 0 ? r.job.exec().completions.total : pods},
      {"completionMode", r.job.exec().completions.indexed ? "Indexed" : "NonIndexed"},
      {"suspend", r.state == JobState::kPending},
      {"backoffLimit", 0},
      {"selector", {{"matchLabels", {{"batch.kubernetes.io/controller-uid", uid("job", r)}}}}},
      {"template", pod_template(ps, config, template_labels(r, kept))}};
  if (!kept.pod_annotations.empty())
    spec["template"]["metadata"]["annotations"] = kept.pod_annotations;
  const PodCounts c = pod_counts(r);
  json status = {{"active", c.active},
                 {"ready", c.ready},
                 {"succeeded", c.succeeded},
                 {"failed", c.failed},
                 {"conditions", job_conditions(r)}};
  if (r.admit_ns > 0 && r.state != JobState::kPending) status["startTime"] = timestamp(r.admit_ns);
  if (r.state == JobState::kSucceeded) status["completionTime"] = timestamp(r.end_ns);
  json m = meta(r.job.name, r, uid("job", r), r.job.submit_ns, job_labels(r, kept));
  m["annotations"] = kept.annotations;
  m["annotations"]["sluice.dev/state"] = state_name(r.state);
  m["annotations"]["sluice.dev/cluster-queue"] = r.cluster_queue;
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", std::move(m)},
              {"spec", std::move(spec)},
              {"status", std::move(status)}};
  applied_overlay(job, kept);
  return job;
}

// NAME STATUS COMPLETIONS DURATION AGE (kubectl's printJob).
json job_row(const JobRecord& r, const json& job, TimeNs now) {
  const char* status = r.state == JobState::kSucceeded ? "Complete"
                       : r.state == JobState::kPending ? "Suspended"
                       : r.state == JobState::kRunning ? "Running"
                                                       : "Failed";
  const auto& spec = job["spec"];
  const std::string completions = std::to_string(job["status"]["succeeded"].get<int64_t>()) + "/" +
                                  std::to_string(spec["completions"].get<int32_t>());
  std::string duration;
  if (r.admit_ns > 0 && r.state != JobState::kPending)
    duration = human_duration((r.state == JobState::kRunning ? now : r.end_ns) - r.admit_ns);
  const json& c = spec["template"]["spec"]["containers"][0];
  return json::array({r.job.name, status, completions, duration,
                      human_duration(now - r.job.submit_ns), c.value("name", ""),
                      c.value("image", "<none>"),
                      "batch.kubernetes.io/controller-uid=" + uid("job", r)});
}

namespace {

json container_state(const JobRecord& r, const PodRun& p) {
  if (p.exited) {
    const bool ok = p.exit.exit_code == 0 && p.exit.signal == 0;
    json t = {{"exitCode", p.exit.signal ? 128 + p.exit.signal : p.exit.exit_code},
              {"reason", ok ? "Completed" : "Error"},
              {"startedAt", time_field(p.started_ns)},
              {"finishedAt", time_field(p.exit.at_unix_ns)}};
    if (p.exit.signal) t["signal"] = p.exit.signal;
    if (!p.exit.message.empty()) t["message"] = p.exit.message;
    return {{"terminated", t}};
  }
  if (p.started && !is_terminal(r.state))
    return {{"running", {{"startedAt", time_field(p.started_ns)}}}};
  if (is_terminal(r.state))
    return {{"terminated", {{"exitCode", 137}, {"reason", "Stopped"}, {"message", r.reason}}}};
  return {{"waiting", {{"reason", "ContainerCreating"}}}};
}

const char* pod_phase(const json& state) {
  if (state.contains("running")) return "Running";
  if (state.contains("waiting")) return "Pending";
  return state["terminated"]["exitCode"] == 0 ? "Succeeded" : "Failed";
}

}  // namespace

bool pod_shown(const JobRecord& r, size_t i, const PodStopping& stopping) {
  if (i >= r.pods.size()) return false;
  if (r.state == JobState::kPending) return stopping && stopping(i);
  return !r.pods[i].deleted;
}

json pod_object(const JobRecord& r, size_t i, const Config& config) {
  const PodRun& p = r.pods[i];
  const size_t s = pod_set_of(r, i);
  const PodSet empty;
  const PodSet& ps = s < r.job.pod_sets.size() ? r.job.pod_sets[s] : empty;
  const KeptMeta kept = kept_meta(r.kube_meta);
  json labels = template_labels(r, kept);
  if (!r.job.queue.empty()) labels[kQueueLabel] = r.job.queue;
  labels["sluice.dev/job-id"] = std::to_string(r.job.id);
  // Each run of a pod is another pod: same name, a new uid (kubectl drain waits for the uid
  // it evicted to go).
  std::string u = uid("pod", r) + "-" + std::to_string(i);
  if (p.run) u += "-" + std::to_string(p.run);
  json m = meta(pod_name(r.job.name, i), r, u, r.admit_ns, std::move(labels));
  m["ownerReferences"] = owner(r);
  if (!kept.pod_annotations.empty()) m["annotations"] = kept.pod_annotations;
  if (r.state == JobState::kPending) {
    // The last run of a job sent back to its queue, still stopping: Terminating.
    m["deletionTimestamp"] = time_field(r.queued_ns);
    m["deletionGracePeriodSeconds"] = r.job.checkpoint_grace_ns / kNsPerSec;
  }
  const json state = container_state(r, p);
  json cs = {{"name", ps.name},
             {"image", ps.exec().image},
             {"imageID", ""},
             {"ready", state.contains("running")},
             {"started", state.contains("running")},
             {"restartCount", 0},
             {"state", state}};
  json status = {{"phase", pod_phase(state)}, {"containerStatuses", json::array({cs})}};
  if (p.started) status["startTime"] = timestamp(p.started_ns);
  json spec = pod_template(ps, config, json::object())["spec"];
  spec["nodeName"] = p.node;
  spec["terminationGracePeriodSeconds"] = r.job.checkpoint_grace_ns / kNsPerSec;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(m)},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

std::vector<json> pod_objects(const JobRecord& r, const Config& config,
                              const PodStopping& stopping) {
  std::vector<json> out;
  for (size_t i = 0; i < r.pods.size(); ++i)
    if (pod_shown(r, i, stopping)) out.push_back(pod_object(r, i, config));
  return out;
}

// NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES (kubectl's printPod).
json pod_row(const JobRecord& r, const json& pod, TimeNs now) {
  const json& cs = pod["status"]["containerStatuses"][0];
  const json& st = cs["state"];
  std::string status = pod["status"]["phase"];
  if (st.contains("terminated")) status = st["terminated"].value("reason", status);
  if (st.contains("waiting")) status = st["waiting"].value("reason", status);
  if (pod["metadata"].contains("deletionTimestamp")) status = "Terminating";
  return json::array({pod["metadata"]["name"], cs["ready"].get<bool>() ? "1/1" : "0/1", status, "0",
                      human_duration(now - r.admit_ns), "<none>", pod["spec"]["nodeName"], "<none>",
                      "<none>"});
}

}  // namespace sluice::server::kube
