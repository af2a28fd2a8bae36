#include "core/place/placer.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>

#include "core/place/bestfit_scorer.h"
#include "core/place/placer_impl.h"
#include "core/place/typical_pods.h"

namespace sluice {

// ---------------------------------------------------------------------------------------------

Placer::Placer(const Cluster& cluster, ScoringPolicy policy, PlacerOptions options)
    : Placer(cluster, make_scorer(policy), options) {}

Placer::Placer(const Cluster& cluster, std::shared_ptr<GpuScorer> scorer, PlacerOptions options)
    : cluster_(&cluster),
      scorer_(std::move(scorer)),
      options_(options),
      models_(gpu_models(cluster)),
      impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.self = this;
  const auto n = static_cast<int32_t>(cluster.nodes.size());
  im.uniform.assign(cluster.nodes.size(), 1);
  im.gpu_capacity.assign(cluster.nodes.size(), 0);
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    im.gpu_base.push_back(static_cast<int32_t>(im.topo.size()));
    for (const Gpu& g : cluster.nodes[i].gpus) {
      im.gpu_capacity[i] += g.mig.empty() ? 1 : 0;
      im.topo.push_back({g.nvlink_domain, g.numa_node, g.pcie_switch});
    }
  }
  for (size_t i = 0; i < cluster.nodes.size(); ++i)
    for (const Gpu& g : cluster.nodes[i].gpus)
      if (g.nvlink_domain != cluster.nodes[i].gpus.front().nvlink_domain) im.uniform[i] = 0;
  im.domain_bits.resize(cluster.levels.size());
  for (size_t l = 0; l < cluster.levels.size(); ++l)
    for (size_t i = 0; i < cluster.nodes.size(); ++i) {
      const auto& doms = cluster.nodes[i].domains;
      if (l >= doms.size() || doms[l] < 0) continue;
      const auto d = static_cast<size_t>(doms[l]);
      if (im.domain_bits[l].size() <= d) im.domain_bits[l].resize(d + 1, NodeBits(n));
      im.domain_bits[l][d].set(static_cast<NodeId>(i));
    }
  for (const Node& node : cluster.nodes)
    for (const Gpu& g : node.gpus)
      for (const MigSlice& s : g.mig) im.mig_resource[s.profile] = 1;
  if (options_.resources)
    for (int r = 0; r < options_.resources->size(); ++r)
      if (options_.resources->is_mig(static_cast<ResourceId>(r)))
        im.mig_resource[static_cast<size_t>(r)] = 1;
  for (NodeBits* b :
       {&im.filter, &im.pref, &im.single, &im.pfit, &im.used_mask, &im.touched_bits, &im.spread})
    *b = NodeBits(n);
  // Node-state grouping: the scorers whose score depends on the node's content only.
  im.group_states = dynamic_cast<const FgdScorer*>(scorer_.get()) != nullptr ||
                    dynamic_cast<const BestFitScorer*>(scorer_.get()) != nullptr;
  if (im.group_states) {
    std::map<std::vector<int64_t>, int32_t> classes;
    std::vector<int64_t> sig;
    im.static_class.resize(cluster.nodes.size());
    for (size_t i = 0; i < cluster.nodes.size(); ++i) {
      const Node& node = cluster.nodes[i];
      sig = {node.cpu_milli, node.memory_mib, im.uniform[i], im.gpu_capacity[i]};
      for (const Gpu& g : node.gpus) {
        const auto m = std::find(models_.begin(), models_.end(), g.model) - models_.begin();
        sig.insert(sig.end(), {m, g.nvlink_domain, g.numa_node, g.pcie_switch,
                               static_cast<int64_t>(g.mig.size())});
        for (const MigSlice& s : g.mig) sig.push_back(s.profile);
      }
      im.static_class[i] = classes.emplace(sig, static_cast<int32_t>(classes.size())).first->second;
    }
    im.seen.resize(std::bit_ceil(2 * cluster.nodes.size() + 2));
    if (classes.size() <= Impl::kMaxIdleClasses) {
      im.class_bits.assign(classes.size(), NodeBits(n));
      for (size_t i = 0; i < cluster.nodes.size(); ++i)
        im.class_bits[static_cast<size_t>(im.static_class[i])].set(static_cast<NodeId>(i));
      im.idle_seen = NodeBits(n);
    }
  }
}

Placer::~Placer() = default;

uint64_t Placer::model_mask(const std::vector<std::string>& models) const {
  if (models.empty()) return ~uint64_t{0};
  uint64_t mask = 0;
  for (const std::string& m : models)
    for (size_t i = 0; i < models_.size() && i < 64; ++i)
      if (models_[i] == m) mask |= uint64_t{1} << i;
  return mask;
}

void Placer::set_workload(const std::vector<WorkloadShape>& shapes) {
  auto* fgd = dynamic_cast<FgdScorer*>(scorer_.get());
  if (fgd == nullptr) return;
  std::vector<TypicalPod> typical;
  typical.reserve(shapes.size());
  for (const WorkloadShape& s : shapes)
    typical.push_back({s.cpu_milli, s.gpus, s.gpu_milli, model_mask(s.allowed_models), s.freq});
  fgd->set_workload(std::move(typical));
}

void Placer::set_workload_from_jobs(const std::vector<const Job*>& jobs, double coverage) {
  if (!uses_workload()) return;
  PodShapeCounts counts;
  for (const Job* job : jobs) count_workload(*job, 1, counts);
  set_workload_from_counts(counts, coverage);
}

bool Placer::uses_workload() const {
  return dynamic_cast<FgdScorer*>(scorer_.get()) != nullptr;
}

void Placer::count_workload(const Job& job, int64_t sign, PodShapeCounts& counts) const {
  const uint64_t mask = model_mask(job.allowed_models);
  for (const PodSet& ps : job.pod_sets) {
    if (ps.count <= 0) continue;
    const PodShapeCounts::key_type key{ps.requests[kCpu], ps.gpus, ps.gpus > 0 ? ps.gpu_milli : 0,
                                       mask};
    auto it = counts.try_emplace(key, 0).first;
    it->second += sign * ps.count;
    if (it->second == 0) counts.erase(it);
  }
}

void Placer::set_workload_from_counts(const PodShapeCounts& counts, double coverage) {
  if (auto* fgd = dynamic_cast<FgdScorer*>(scorer_.get()))
    fgd->set_workload(typical_pods(counts, coverage));
}

void Placer::set_node_ends(const std::vector<TimeNs>* node_end, TimeNs now, bool bins) const {
  impl_->node_end = node_end;
  impl_->now = now;
  impl_->end_bins = node_end != nullptr && bins;
  if (!node_end) impl_->default_walltime = 0;
}

void Placer::set_default_walltime(TimeNs walltime) const {
  impl_->default_walltime = walltime;
}

std::variant<Placement, PlaceFailure> Placer::place(const Job& job, const NodeSet& nodes,
                                                    const ClusterAlloc& alloc) const {
  Impl& im = *impl_;
  im.alloc = &alloc;
  im.job = &job;
  const TimeNs walltime = job.walltime_ns > 0 ? job.walltime_ns : im.default_walltime;
  im.job_end = im.node_end && walltime > 0 ? im.now + walltime : 0;
  im.require_nvlink = job.gpu_locality == GpuLocality::kRequireNvlink;
  im.order = scorer_->order();
  im.fail_pod_set = -1;
  im.max_pods_placed = 0;
  const int levels = static_cast<int>(cluster_->levels.size());
  auto fail = [&](PlaceFailCode code, int32_t fit, std::string detail) {
    PlaceFailure f;
    f.code = code;
    f.pods_needed = job.pod_count();
    f.pods_fit = fit;
    f.detail = std::move(detail);
    return std::variant<Placement, PlaceFailure>(std::move(f));
  };
  const std::string where = nodes.name().empty() ? "" : " in flavor " + nodes.name();

  // 1. Pod shapes, one per pod set.
  const uint64_t mask = model_mask(job.allowed_models);
  im.shapes.clear();
  bool gpu_job = false;
  int64_t whole_needed = 0;
  int32_t max_whole = 0;
  for (size_t i = 0; i < job.pod_sets.size(); ++i) {
    const PodSet& ps = job.pod_sets[i];
    PodShape s;
    s.job = job.id;
    s.pod_set = static_cast<int32_t>(i);
    s.cpu_milli = ps.requests[kCpu];
    s.memory_mib = ps.requests[kMemory];
    s.gpus = ps.gpus;
    s.gpu_milli = ps.gpus > 0 ? ps.gpu_milli : 0;
    s.model_mask = mask;
    for (int r = 0; r < kMaxResources; ++r) {
      if (!im.mig_resource[static_cast<size_t>(r)] || ps.requests[static_cast<ResourceId>(r)] <= 0)
        continue;
      if (s.mig_count == static_cast<int32_t>(s.mig.size())) break;
      const int64_t slices =
          (ps.requests[static_cast<ResourceId>(r)] + kMilliPerGpu - 1) / kMilliPerGpu;
      s.mig[static_cast<size_t>(s.mig_count++)] = {static_cast<ResourceId>(r),
                                                   static_cast<int32_t>(slices)};
    }
    s.compute_key();
    if (s.gpu_pod() && ps.count > 0) gpu_job = true;
    if (s.gpus > 0 && !s.shared() && ps.count > 0) {
      whole_needed += int64_t{s.gpus} * ps.count;
      max_whole = std::max(max_whole, s.gpus);
    }
    im.shapes.push_back(s);
  }
  if (job.pod_count() == 0) return Placement{};

  // 2. The candidate mask: node set, readiness, GPU model.
  std::string model_words;
  if (!job.allowed_models.empty()) {
    for (const std::string& m : job.allowed_models)
      model_words += (model_words.empty() ? "" : "/") + m;
    model_words += " ";
  }
  if (nodes.empty() || nodes.bits().size() != alloc.node_count())
    return fail(
        PlaceFailCode::kNoNodes, 0,
        "no node matches" + (where.empty() ? std::string(" the node set") : where.substr(3)));
  im.filter = nodes.bits();
  im.filter &= alloc.ready_bits();
  if (!im.filter.any())
    return fail(PlaceFailCode::kNoNodes, 0,
                "none of the " + plural(nodes.size(), "node", "nodes") + where +
                    " takes new pods now (NotReady, cordoned or drained)");
  if (gpu_job && !job.allowed_models.empty()) {
    im.pref.clear();
    for (size_t m = 0; m < models_.size() && m < 64; ++m)
      if ((mask >> m) & 1U) im.pref |= alloc.model_nodes(static_cast<int>(m));
    im.filter &= im.pref;
    if (!im.filter.any())
      return fail(PlaceFailCode::kNoNodes, 0,
                  "no ready " + model_words + "node" +
                      (where.empty() ? std::string(" exists") : " matches" + where.substr(3)));
  }

  // 3. O(1) rejections from the cluster-wide summaries.
  if (max_whole > alloc.max_whole_gpus_free())
    return fail(PlaceFailCode::kInsufficient, 0,
                "no node has " + plural(max_whole, "free GPU", "free GPUs") +
                    " (most: " + std::to_string(alloc.max_whole_gpus_free()) + ")");

  if (whole_needed > alloc.total_whole_gpus_free())
    return fail(PlaceFailCode::kInsufficient, 0,
                "needs " + plural(whole_needed, "free GPU", "free GPUs") + ", the cluster has " +
                    std::to_string(alloc.total_whole_gpus_free()));
  // 4. Pods, largest first (GPU milli, MIG slices, CPU, memory; then pod set, index).
  im.pods.clear();
  for (size_t i = 0; i < job.pod_sets.size(); ++i)
    for (int32_t k = 0; k < job.pod_sets[i].count; ++k)
      im.pods.emplace_back(static_cast<int32_t>(i), k);
  std::stable_sort(im.pods.begin(), im.pods.end(), [&](const auto& a, const auto& b) {
    const PodShape& x = im.shapes[static_cast<size_t>(a.first)];
    const PodShape& y = im.shapes[static_cast<size_t>(b.first)];
    if (x.gpu_milli_total() != y.gpu_milli_total())
      return x.gpu_milli_total() > y.gpu_milli_total();
    if (x.mig_count != y.mig_count) return x.mig_count > y.mig_count;
    if (x.cpu_milli != y.cpu_milli) return x.cpu_milli > y.cpu_milli;
    return x.memory_mib > y.memory_mib;
  });

  auto success = [&]() {
    Placement p;
    p.pods = std::move(im.out);
    im.out = {};
    std::sort(p.pods.begin(), p.pods.end(), [](const PodPlacement& a, const PodPlacement& b) {
      return a.pod_set != b.pod_set ? a.pod_set < b.pod_set : a.pod_index < b.pod_index;
    });
    return std::variant<Placement, PlaceFailure>(std::move(p));
  };
  const int32_t total_pods = job.pod_count();
  const int32_t level = job.topology.level;
  const bool topo = level >= 0 && level <= levels;
  const std::string level_name = !topo            ? ""
                                 : level < levels ? cluster_->levels[static_cast<size_t>(level)]
                                                  : "node";

  // 5. Topology: one domain of the level (required); preferred: of that level, else of each
  //    coarser level in turn (Kueue's order), else step 6.
  const bool sliced = !job.topology.slices.empty();
  if (topo && (total_pods > 1 || sliced)) {
    int32_t domains_tried = 0;
    int64_t most_free = 0;
    const int last = job.topology.required ? level : 0;
    for (int l = level; l >= last; --l)
      if (im.place_in_one_domain(l, whole_needed, max_whole, &domains_tried, &most_free))
        return success();
    if (job.topology.required) {
      if (domains_tried == 0)
        return fail(PlaceFailCode::kTopology, 0,
                    "no " + level_name + " has " + plural(whole_needed, "free GPU", "free GPUs") +
                        " for all " + std::to_string(total_pods) +
                        " pods (most: " + std::to_string(most_free) + ")");
      return fail(PlaceFailCode::kTopology, im.max_pods_placed,
                  "no " + level_name + " can hold all " + std::to_string(total_pods) + " pods" +
                      (sliced ? " in its slices" : "") + " (best " + level_name + " fits " +
                      std::to_string(im.max_pods_placed) + ")");
    }
  }

  // 6. Unrestricted (or preferred: spill, domains already used first; slices stay whole).
  im.max_pods_placed = 0;
  if (sliced ? im.place_gang(im.filter) : im.place_all(im.filter, topo ? level : -1))
    return success();
  if (sliced) {
    const TopologySlice& inner = job.topology.slices.back();
    const std::string inner_name =
        inner.level < levels ? cluster_->levels[static_cast<size_t>(inner.level)] : "node";
    return fail(PlaceFailCode::kTopology, im.max_pods_placed,
                "gang needs " + std::to_string(total_pods) + " pods in slices of " +
                    std::to_string(inner.size) + ", each in one " + inner_name + "; " +
                    std::to_string(im.max_pods_placed) + " fit" + where);
  }

  // 7. Why not, in words.
  const PodShape& pod = im.shapes[static_cast<size_t>(im.fail_pod_set)];
  const PodSet& ps = job.pod_sets[static_cast<size_t>(im.fail_pod_set)];
  std::string what;
  if (pod.shared())
    what = "a " + model_words + "GPU with " + std::to_string(pod.gpu_milli) + " free milli";
  else if (pod.gpus > 0)
    what = plural(pod.gpus, "free ", "free ") + model_words + (pod.gpus == 1 ? "GPU" : "GPUs");
  else if (pod.mig_count > 0)
    what = "free MIG slices";
  else
    what = format_canonical(kCpu, pod.cpu_milli) + " CPU and " +
           format_canonical(kMemory, pod.memory_mib) + " memory free";
  const Reasons& r = im.reasons;
  std::string why;
  PlaceFailCode code = PlaceFailCode::kInsufficient;
  if (r.locality > 0 && r.cpu == 0 && r.mem == 0) {
    code = PlaceFailCode::kGpuLocality;
    why = "no node has " + plural(pod.gpus, "free GPU", "free GPUs") + " in one NVLink domain";
  } else if (r.cpu > 0 || r.mem > 0) {
    why = "no node has " + what + " with " + format_canonical(kCpu, pod.cpu_milli) + " CPU and " +
          format_canonical(kMemory, pod.memory_mib) + " memory free";
  } else {
    why = "no node has " + what;
  }
  if (ps.max_per_node > 0)
    why += ps.max_per_node == 1
               ? " that no other pod of the gang uses"
               : " that holds fewer than " + std::to_string(ps.max_per_node) + " of its pods";
  if (total_pods > 1)
    return fail(code, im.max_pods_placed,
                "gang needs " + std::to_string(total_pods) + " pods (" + std::to_string(ps.count) +
                    " with " + what + " each" +
                    (ps.max_per_node == 1 ? ", each on a node of its own" : "") + "); " +
                    std::to_string(im.max_pods_placed) + " fit; " + why + where);
  return fail(code, 0, why + where);
}

}  // namespace sluice
