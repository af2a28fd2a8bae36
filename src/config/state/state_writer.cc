// write_state(): the inverse of the job reader and of status.admission (admitted.h).
#include "config/state/state_writer.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "core/model/deadline.h"

namespace sluice {

namespace {

YAML::Node flow(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

YAML::Node pod_set_node(const PodSet& ps, const Config& c) {
  YAML::Node n;
  n["name"] = ps.name;
  n["count"] = ps.count;
  if (ps.min_count > 0) n["minCount"] = ps.min_count;
  YAML::Node res(YAML::NodeType::Map);
  for (int i = 0; i < c.resources.size(); ++i) {
    const auto r = static_cast<ResourceId>(i);
    if (ps.requests[r] == 0 || (r == kGpu && ps.gpu_milli < kMilliPerGpu)) continue;
    res[c.resources.name(r)] = format_canonical(r, ps.requests[r]);
  }
  n["resources"] = flow(res);
  if (ps.gpus == 1 && ps.gpu_milli < kMilliPerGpu)
    n["gpuFraction"] = std::to_string(ps.gpu_milli) + "m";
  return flow(n);
}

YAML::Node fallback_node(const FallbackRequest& f) {
  YAML::Node n;
  if (f.after_ns >= 0) n["after"] = seconds_text(f.after_ns);
  for (const auto& s : f.shapes) {
    YAML::Node shape;
    shape["pods"] = s.pods;
    shape["gpus"] = s.gpus;
    if (s.cpu_milli >= 0) shape["cpu"] = format_canonical(kCpu, s.cpu_milli);
    if (s.memory_mib >= 0) shape["memory"] = format_canonical(kMemory, s.memory_mib);
    n["shapes"].push_back(flow(shape));
  }
  return n;
}

YAML::Node spec_node(const Job& job, const Config& c) {
  YAML::Node spec;
  spec["id"] = job.id;
  spec["queue"] = job.queue;
  if (!job.exec().priority_class.empty()) spec["priorityClassName"] = job.exec().priority_class;
  spec["preemptible"] = job.preemptible;
  spec["interactive"] = job.interactive;
  spec["submitTime"] = seconds_text(job.submit_ns);
  for (const auto& ps : job.pod_sets) spec["podSets"].push_back(pod_set_node(ps, c));
  if (!job.allowed_models.empty()) spec["gpuModels"] = flow(YAML::Node(job.allowed_models));
  if (job.right_size) spec["rightSize"] = "auto";
  if (job.topology.level >= 0) {
    const auto level = static_cast<size_t>(job.topology.level);
    const std::string name = level < c.cluster.levels.size() ? c.cluster.levels[level] : "node";
    YAML::Node t;
    t[job.topology.required ? "required" : "preferred"] = name;
    spec["topology"] = flow(t);
  }
  if (job.gpu_locality == GpuLocality::kRequireNvlink) spec["gpuLocality"] = "nvlink";
  if (job.walltime_ns > 0) spec["walltime"] = seconds_text(job.walltime_ns);
  if (job.checkpoint_grace_ns > 0) spec["checkpointGrace"] = seconds_text(job.checkpoint_grace_ns);
  if (job.complete_by_ns > 0) spec["completeBy"] = format_rfc3339(job.complete_by_ns);
  if (job.complete_within_ns > 0) spec["completeWithin"] = seconds_text(job.complete_within_ns);
  if (job.fallback.after_ns >= 0 || !job.fallback.shapes.empty())
    spec["fallback"] = fallback_node(job.fallback);
  return spec;
}

std::string device_text(const GpuShare& g) {
  return g.mig_slice >= 0 ? std::to_string(g.gpu) + "/" + std::to_string(g.mig_slice)
                          : std::to_string(g.gpu);
}

YAML::Node status_node(const Job& job, const Admission& a, TimeNs admitted_ns, const Config& c) {
  Job runs = a.shape >= 0 ? reshaped(job, job.fallback.shapes[static_cast<size_t>(a.shape)]) : job;
  if (!a.pod_set_counts.empty()) runs = with_counts(runs, a.pod_set_counts);
  const ClusterQueue& cq = c.cluster_queues[static_cast<size_t>(a.queue)];
  YAML::Node adm;
  adm["clusterQueue"] = cq.name;
  for (size_t i = 0; i < runs.pod_sets.size(); ++i) {
    const PodSet& ps = runs.pod_sets[i];
    YAML::Node psa;
    psa["name"] = ps.name;
    psa["count"] = ps.count;
    YAML::Node flavors(YAML::NodeType::Map);
    const auto& mine = a.flavors_of(i);
    for (size_t g = 0; g < cq.resource_groups.size() && g < mine.size(); ++g) {
      if (mine[g] < 0) continue;
      for (ResourceId r : cq.resource_groups[g].covered)
        if (ps.requests[r] > 0)
          flavors[c.resources.name(r)] = c.flavors[static_cast<size_t>(mine[g])].name;
    }
    psa["flavors"] = flow(flavors);
    YAML::Node nodes(YAML::NodeType::Sequence), gpus(YAML::NodeType::Sequence);
    for (const auto& pp : a.placement.pods) {
      if (pp.pod_set != static_cast<int32_t>(i)) continue;
      nodes.push_back(c.cluster.nodes[static_cast<size_t>(pp.node)].name);
      YAML::Node devs(YAML::NodeType::Sequence);
      for (const auto& g : pp.gpus) devs.push_back(device_text(g));
      gpus.push_back(flow(devs));
    }
    psa["nodes"] = flow(nodes);
    psa["gpus"] = flow(gpus);
    adm["podSetAssignments"].push_back(psa);
  }
  if (a.best_effort) adm["bestEffort"] = true;
  if (a.shape >= 0) adm["fallbackShape"] = a.shape + 1;
  YAML::Node status;
  status["admission"] = adm;
  status["admissionTime"] = seconds_text(admitted_ns);
  return status;
}

void append(std::string& out, const YAML::Node& doc) {
  YAML::Emitter e;
  e << doc;
  out += "---\n";
  out += e.c_str();
  out += "\n";
}

}  // namespace

std::string seconds_text(TimeNs ns) {
  const bool negative = ns < 0;
  const uint64_t v = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string frac = std::to_string(v % kNsPerSec);
  frac.insert(0, 9 - frac.size(), '0');
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return (negative ? "-" : "") + std::to_string(v / kNsPerSec) + (frac.empty() ? "" : "." + frac);
}

std::string write_state(const std::string& config_yaml, const std::vector<std::string>& drop_kinds,
                        const Config& config, const std::vector<StateJob>& jobs, TimeNs now,
                        const std::string& source) {
  std::string out = "# sluice state";
  if (!source.empty()) out += " of " + source;
  out += " at " + seconds_text(now) + " s: `sluice plan --config THIS-FILE [jobs]` replays it\n";
  // 1. The configuration, as loaded.
  for (const YAML::Node& doc : YAML::LoadAll(config_yaml)) {
    if (doc.IsNull()) continue;
    const YAML::Node kind = doc.IsMap() ? doc["kind"] : YAML::Node();
    if (kind && kind.IsScalar() &&
        std::find(drop_kinds.begin(), drop_kinds.end(), kind.Scalar()) != drop_kinds.end())
      continue;
    append(out, doc);
  }
  // 2. The time it describes.
  YAML::Node snap;
  snap["apiVersion"] = "sluice.dev/v1alpha1";
  snap["kind"] = "Snapshot";
  snap["metadata"]["name"] = "state";
  snap["spec"]["time"] = seconds_text(now);
  if (!source.empty()) snap["spec"]["server"] = source;
  append(out, snap);
  // 3. The jobs.
  std::set<std::pair<std::string, std::string>> names;
  for (const StateJob& sj : jobs) {
    const Job& job = *sj.job;
    std::string name = job.name;
    if (!names.emplace(job.namespace_, name).second) {
      name += "#" + std::to_string(job.id);
      names.emplace(job.namespace_, name);
    }
    YAML::Node doc;
    doc["apiVersion"] = "sluice.dev/v1alpha1";
    doc["kind"] = "Job";
    doc["metadata"]["name"] = name;
    doc["metadata"]["namespace"] = job.namespace_;
    doc["spec"] = spec_node(job, config);
    if (sj.admission) doc["status"] = status_node(job, *sj.admission, sj.admitted_ns, config);
    append(out, doc);
  }
  return out;
}

}  // namespace sluice
