// A job's Kueue Workload (kueue.x-k8s.io/v1beta1): its pod sets, its admission (ClusterQueue,
// flavors per resource, usage) and the conditions Kueue sets, with Kueue's reasons:
// QuotaReserved, Admitted, Evicted (Preempted), Finished (Succeeded, Failed).
#include "server/http/kube.h"
#include "server/http/kube_meta.h"

namespace sluice::server::kube {

namespace {

// Kueue's conditions carry the generation they were set for.
json wl_condition(const std::string& type, bool status, TimeNs at, const std::string& reason,
                  const std::string& message) {
  json c = condition(type, status, at, reason, message);
  c["observedGeneration"] = 1;
  return c;
}

// Pod set i's flavor of each resource it requests (Kueue's podSetAssignments[].flavors).
json flavors_of(const JobRecord& r, size_t i, const Config& config) {
  json out = json::object();
  if (!r.admission || r.admission->queue < 0 ||
      static_cast<size_t>(r.admission->queue) >= config.cluster_queues.size())
    return out;
  const auto& cq = config.cluster_queues[static_cast<size_t>(r.admission->queue)];
  const auto& per_group = r.admission->flavors_of(i);
  const auto& req = r.job.pod_sets[i].requests;
  for (size_t g = 0; g < cq.resource_groups.size() && g < per_group.size(); ++g) {
    if (per_group[g] < 0) continue;
    for (ResourceId res : cq.resource_groups[g].covered)
      if (req[res] != 0)
        out[config.resources.name(res)] = config.flavors[static_cast<size_t>(per_group[g])].name;
  }
  return out;
}

json admission(const JobRecord& r, const Config& config) {
  json sets = json::array();
  const auto& counts = r.admission ? r.admission->pod_set_counts : std::vector<int32_t>{};
  for (size_t i = 0; i < r.job.pod_sets.size(); ++i) {
    const PodSet& ps = r.job.pod_sets[i];
    const int32_t n = i < counts.size() ? counts[i] : ps.count;
    sets.push_back({{"name", ps.name},
                    {"flavors", flavors_of(r, i, config)},
                    {"resourceUsage", quantities(ps.requests, config, n)},
                    {"count", n}});
  }
  return {{"clusterQueue", r.cluster_queue}, {"podSetAssignments", sets}};
}

json conditions(const JobRecord& r, const std::string& why_pending) {
  json out = json::array();
  const bool ran = r.admit_ns > 0 && r.state != JobState::kPending;
  if (ran) {
    out.push_back(wl_condition("QuotaReserved", true, r.admit_ns, "QuotaReserved",
                               "Quota reserved in ClusterQueue " + r.cluster_queue));
    out.push_back(
        wl_condition("Admitted", true, r.admit_ns, "Admitted", "The workload is admitted"));
  } else if (r.state == JobState::kPending) {
    out.push_back(wl_condition("QuotaReserved", false, r.queued_ns, "Pending", why_pending));
    if (r.preemptions > 0)
      out.push_back(wl_condition("Evicted", true, r.queued_ns, "Preempted", r.reason));
  }
  if (r.state == JobState::kSucceeded)
    out.push_back(
        wl_condition("Finished", true, r.end_ns, "Succeeded", "Job finished successfully"));
  if (r.state == JobState::kFailed || r.state == JobState::kRejected)
    out.push_back(wl_condition("Finished", true, r.end_ns, "Failed", r.reason));
  return out;
}

}  // namespace

json workload_object(const JobRecord& r, const Config& config, const std::string& why_pending) {
  json sets = json::array();
  for (const auto& ps : r.job.pod_sets) {
    json c = {{"name", ps.name}, {"resources", {{"requests", quantities(ps.requests, config)}}}};
    if (!ps.exec().image.empty()) c["image"] = ps.exec().image;
    json set = {
        {"name", ps.name},
        {"count", ps.count},
        {"template", {{"spec", {{"containers", json::array({c})}, {"restartPolicy", "Never"}}}}}};
    if (ps.min_count > 0) set["minCount"] = ps.min_count;
    sets.push_back(std::move(set));
  }
  json spec = {{"queueName", r.job.queue},
               {"priority", r.job.priority},
               {"active", !r.held},
               {"podSets", std::move(sets)}};
  if (!r.job.exec().priority_class.empty()) {
    spec["priorityClassName"] = r.job.exec().priority_class;
    spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass";
  }
  json status = {{"conditions", conditions(r, why_pending)}};
  if (r.admit_ns > 0 && r.state != JobState::kPending) status["admission"] = admission(r, config);
  const std::string job_uid = "sluice-job-" + std::to_string(r.job.id);
  // The Job's own labels (kube_meta.h), then Kueue's.
  json labels = kept_meta(r.kube_meta).labels;
  labels["kueue.x-k8s.io/job-uid"] = job_uid;
  json m = {{"name", workload_name(r)},
            {"namespace", r.job.namespace_},
            {"uid", "sluice-workload-" + std::to_string(r.job.id)},
            {"resourceVersion", std::to_string(r.rv)},
            {"generation", 1},
            {"creationTimestamp", time_field(r.job.submit_ns)},
            {"labels", std::move(labels)},
            {"ownerReferences", json::array({{{"apiVersion", "batch/v1"},
                                              {"kind", "Job"},
                                              {"name", r.job.name},
                                              {"uid", job_uid},
                                              {"controller", true},
                                              {"blockOwnerDeletion", true}}})}};
  return {{"apiVersion", std::string(kKueueGroup) + "/" + kKueueVersion},
          {"kind", "Workload"},
          {"metadata", std::move(m)},
          {"spec", std::move(spec)},
          {"status", std::move(status)}};
}

namespace {

std::string condition_status(const json& wl, const std::string& type) {
  for (const auto& c : wl["status"]["conditions"])
    if (c["type"] == type) return c["status"];
  return "";
}

}  // namespace

// NAME QUEUE RESERVED IN ADMITTED FINISHED AGE (Kueue's printer columns).
json workload_row(const JobRecord& r, const json& wl, TimeNs now) {
  const json& st = wl["status"];
  const std::string reserved =
      st.contains("admission") ? st["admission"]["clusterQueue"].get<std::string>() : "";
  return json::array({wl["metadata"]["name"], r.job.queue, reserved,
                      condition_status(wl, "Admitted"), condition_status(wl, "Finished"),
                      human_duration(now - r.job.submit_ns)});
}

}  // namespace sluice::server::kube
