#include "cli/decisions_json.h"

namespace sluice::cli {

using nlohmann::json;

json placement_json(const Placement& p, const Config& config) {
  json pods = json::array();
  for (const auto& pod : p.pods) {
    json gpus = json::array();
    for (const auto& g : pod.gpus) {
      json jg = {{"gpu", g.gpu}, {"milli", g.milli}};
      if (g.mig_slice >= 0) jg["mig_slice"] = g.mig_slice;
      gpus.push_back(jg);
    }
    pods.push_back({{"pod_set", pod.pod_set},
                    {"pod", pod.pod_index},
                    {"node", config.cluster.nodes[pod.node].name},
                    {"gpus", gpus}});
  }
  return pods;
}

namespace {

// Per pod set (index order) the flavors it got, where pod sets got different ones.
json pod_set_flavors_json(const Admission& a, const Config& c) {
  json out = json::array();
  for (const auto& per : a.pod_set_flavors) {
    json names = json::array();
    for (FlavorId f : per)
      if (f >= 0) names.push_back(c.flavors[static_cast<size_t>(f)].name);
    out.push_back(names);
  }
  return out;
}

}  // namespace

json admission_json(const Admission& a, const Scheduler& s, const std::string& job_name) {
  const Config& c = s.config();
  json flavors = json::array();
  for (FlavorId f : a.flavors_used()) flavors.push_back(c.flavors[f].name);
  json usage = json::object();
  for (const auto& u : a.usage)
    usage[c.flavors[u.flavor].name + "/" + c.resources.name(u.resource)] =
        format_canonical(u.resource, u.amount);
  json out = {{"job", job_name},
              {"id", a.job},
              {"queue", c.cluster_queues[a.queue].name},
              {"flavors", flavors},
              {"borrowing", a.borrowing},
              {"usage", usage},
              {"placement", placement_json(a.placement, c)}};
  if (!a.pod_set_flavors.empty()) out["pod_set_flavors"] = pod_set_flavors_json(a, c);
  return out;
}

json cycle_json(const CycleResult& r, const Scheduler& s,
                const std::function<std::string(JobId)>& job_name) {
  const Config& c = s.config();
  json admitted = json::array();
  for (const auto& a : r.admitted) admitted.push_back(admission_json(a, s, job_name(a.job)));
  json pending = json::array();
  static const char* kCodes[] = {"Quota",
                                 "NeverFitsQuota",
                                 "Placement",
                                 "StrictFIFOBlocked",
                                 "HeldForStarvingJob",
                                 "Reservation",
                                 "OverBudget",
                                 "InactiveClusterQueue"};
  for (const auto& p : r.pending)
    pending.push_back({{"job", job_name(p.job)},
                       {"id", p.job},
                       {"queue", c.cluster_queues[p.reason.queue].name},
                       {"code", kCodes[static_cast<int>(p.reason.code)]},
                       {"starving", p.starving},
                       {"reason", describe(p.reason, c)}});
  json preempted = json::array();
  for (const auto& p : r.preempted)
    preempted.push_back(
        {{"victim", job_name(p.victim)},
         {"victim_id", p.victim},
         {"preemptor", job_name(p.preemptor)},
         {"reason", p.reason == PreemptReason::kWithinClusterQueue ? "WithinClusterQueue"
                                                                   : "ReclaimWithinCohort"},
         {"grace_s", static_cast<double>(p.grace_ns) / kNsPerSec},
         {"lost_gpu_hours",
          static_cast<double>(p.lost_gpu_milli_ns) / 1000.0 / kNsPerSec / 3600.0}});
  json rejected = json::array();
  for (const auto& x : r.rejected)
    rejected.push_back({{"job", job_name(x.job)},
                        {"id", x.job},
                        {"reason",
                         "interactive job could not start within the interactive "
                         "timeout: " +
                             describe(x.reason, c)}});
  return {{"now_s", static_cast<double>(r.now) / kNsPerSec},
          {"evaluated", r.evaluated},
          {"admitted", admitted},
          {"preempted", preempted},
          {"rejected", rejected},
          {"pending", pending}};
}

std::string placement_text(const Placement& p, const Config& config) {
  std::string out;
  for (const auto& pod : p.pods) {
    if (!out.empty()) out += " ";
    out += config.cluster.nodes[pod.node].name + "[";
    for (size_t i = 0; i < pod.gpus.size(); ++i) {
      const auto& g = pod.gpus[i];
      if (i) out += ",";
      out += std::to_string(g.gpu);
      if (g.mig_slice >= 0)
        out += "/mig" + std::to_string(g.mig_slice);
      else if (g.milli < 1000)
        out += ":" + std::to_string(g.milli) + "m";
    }
    out += "]";
  }
  return out;
}

}  // namespace sluice::cli
