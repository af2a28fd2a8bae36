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

namespace {

// A failure of `job`: `fit` of its pods placed, and why not.
PlaceFailure failure(const Job& job, PlaceFailCode code, int32_t fit, std::string detail) {
  PlaceFailure f;
  f.code = code;
  f.pods_needed = job.pod_count();
  f.pods_fit = fit;
  f.detail = std::move(detail);
  return f;
}

// The job's GPU models as words ("A100/H100 "); "" when any model will do.
std::string model_words(const Job& job) {
  std::string words;
  if (job.allowed_models.empty()) return words;
  for (const std::string& m : job.allowed_models) words += (words.empty() ? "" : "/") + m;
  return words + " ";
}

}  // namespace

std::variant<Placement, PlaceFailure> Placer::place(const Job& job, const NodeSet& nodes,
                                                    const ClusterAlloc& alloc) const {
  Impl& im = *impl_;
  im.begin(job, alloc);
  const uint64_t mask = model_mask(job.allowed_models);
  const Impl::Needs needs = im.shape_pods(job, mask);
  if (job.pod_count() == 0) return Placement{};
  const std::string where = nodes.name().empty() ? "" : " in flavor " + nodes.name();
  const std::string models = model_words(job);
  if (auto f = im.filter_nodes(job, nodes, mask, needs, models, where)) return std::move(*f);
  im.order_pods(job);
  if (auto done = im.place_in_topology(job, needs)) return std::move(*done);
  if (auto done = im.place_anywhere(job, where)) return std::move(*done);
  return im.why_not(job, models, where);
}

void Placer::Impl::begin(const Job& j, const ClusterAlloc& a) {
  alloc = &a;
  job = &j;
  const TimeNs walltime = j.walltime_ns > 0 ? j.walltime_ns : default_walltime;
  job_end = node_end && walltime > 0 ? now + walltime : 0;
  require_nvlink = j.gpu_locality == GpuLocality::kRequireNvlink;
  order = self->scorer_->order();
  fail_pod_set = -1;
  max_pods_placed = 0;
}

Placer::Impl::Needs Placer::Impl::shape_pods(const Job& j, uint64_t mask) {
  Needs needs;
  shapes.clear();
  for (size_t i = 0; i < j.pod_sets.size(); ++i) {
    const PodSet& ps = j.pod_sets[i];
    PodShape s;
    s.job = j.id;
    s.pod_set = static_cast<int32_t>(i);
    s.cpu_milli = ps.requests[kCpu];
    s.memory_mib = ps.requests[kMemory];
    s.gpus = ps.gpus;
    s.gpu_milli = ps.gpus > 0 ? ps.gpu_milli : 0;
    s.model_mask = mask;
    for (int r = 0; r < kMaxResources; ++r) {
      if (!mig_resource[static_cast<size_t>(r)] || ps.requests[static_cast<ResourceId>(r)] <= 0)
        continue;
      if (s.mig_count == static_cast<int32_t>(s.mig.size())) break;
      const int64_t slices =
          (ps.requests[static_cast<ResourceId>(r)] + kMilliPerGpu - 1) / kMilliPerGpu;
      s.mig[static_cast<size_t>(s.mig_count++)] = {static_cast<ResourceId>(r),
                                                   static_cast<int32_t>(slices)};
    }
    s.compute_key();
    if (s.gpu_pod() && ps.count > 0) needs.gpu_job = true;
    if (s.gpus > 0 && !s.shared() && ps.count > 0) {
      needs.whole_needed += int64_t{s.gpus} * ps.count;
      needs.max_whole = std::max(needs.max_whole, s.gpus);
    }
    shapes.push_back(s);
  }
  return needs;
}

std::optional<PlaceFailure> Placer::Impl::filter_nodes(const Job& j, const NodeSet& nodes,
                                                       uint64_t mask, const Needs& needs,
                                                       const std::string& models,
                                                       const std::string& where) {
  if (nodes.empty() || nodes.bits().size() != alloc->node_count())
    return failure(
        j, PlaceFailCode::kNoNodes, 0,
        "no node matches" + (where.empty() ? std::string(" the node set") : where.substr(3)));
  filter = nodes.bits();
  filter &= alloc->ready_bits();
  if (!filter.any())
    return failure(j, PlaceFailCode::kNoNodes, 0,
                   "none of the " + plural(nodes.size(), "node", "nodes") + where +
                       " takes new pods now (NotReady, cordoned or drained)");
  if (needs.gpu_job && !j.allowed_models.empty()) {
    pref.clear();
    for (size_t m = 0; m < self->models_.size() && m < 64; ++m)
      if ((mask >> m) & 1U) pref |= alloc->model_nodes(static_cast<int>(m));
    filter &= pref;
    if (!filter.any())
      return failure(j, PlaceFailCode::kNoNodes, 0,
                     "no ready " + models + "node" +
                         (where.empty() ? std::string(" exists") : " matches" + where.substr(3)));
  }
  // 3. O(1) rejections from the cluster-wide summaries.
  if (needs.max_whole > alloc->max_whole_gpus_free())
    return failure(j, PlaceFailCode::kInsufficient, 0,
                   "no node has " + plural(needs.max_whole, "free GPU", "free GPUs") +
                       " (most: " + std::to_string(alloc->max_whole_gpus_free()) + ")");
  if (needs.whole_needed > alloc->total_whole_gpus_free())
    return failure(j, PlaceFailCode::kInsufficient, 0,
                   "needs " + plural(needs.whole_needed, "free GPU", "free GPUs") +
                       ", the cluster has " + std::to_string(alloc->total_whole_gpus_free()));
  return std::nullopt;
}

void Placer::Impl::order_pods(const Job& j) {
  pods.clear();
  for (size_t i = 0; i < j.pod_sets.size(); ++i)
    for (int32_t k = 0; k < j.pod_sets[i].count; ++k) pods.emplace_back(static_cast<int32_t>(i), k);
  std::stable_sort(pods.begin(), pods.end(), [&](const auto& a, const auto& b) {
    const PodShape& x = shapes[static_cast<size_t>(a.first)];
    const PodShape& y = shapes[static_cast<size_t>(b.first)];
    if (x.gpu_milli_total() != y.gpu_milli_total())
      return x.gpu_milli_total() > y.gpu_milli_total();
    if (x.mig_count != y.mig_count) return x.mig_count > y.mig_count;
    if (x.cpu_milli != y.cpu_milli) return x.cpu_milli > y.cpu_milli;
    return x.memory_mib > y.memory_mib;
  });
}

Placement Placer::Impl::take_placement() {
  Placement p;
  p.pods = std::move(out);
  out = {};
  std::sort(p.pods.begin(), p.pods.end(), [](const PodPlacement& a, const PodPlacement& b) {
    return a.pod_set != b.pod_set ? a.pod_set < b.pod_set : a.pod_index < b.pod_index;
  });
  return p;
}

int32_t Placer::Impl::topology_level(const Job& j) const {
  const int32_t level = j.topology.level;
  return level >= 0 && level <= static_cast<int32_t>(cluster().levels.size()) ? level : -1;
}

std::string Placer::Impl::level_name(int32_t level) const {
  return level < static_cast<int32_t>(cluster().levels.size())
             ? cluster().levels[static_cast<size_t>(level)]
             : "node";
}

std::optional<Placer::Impl::Outcome> Placer::Impl::place_in_topology(const Job& j,
                                                                     const Needs& needs) {
  const int32_t level = topology_level(j);
  const bool sliced = !j.topology.slices.empty();
  const int32_t total_pods = j.pod_count();
  if (level < 0 || (total_pods <= 1 && !sliced)) return std::nullopt;
  int32_t domains_tried = 0;
  int64_t most_free = 0;
  const int last = j.topology.required ? level : 0;
  for (int l = level; l >= last; --l)
    if (place_in_one_domain(l, needs.whole_needed, needs.max_whole, &domains_tried, &most_free))
      return take_placement();
  if (!j.topology.required) return std::nullopt;
  const std::string name = level_name(level);
  if (domains_tried == 0)
    return failure(j, PlaceFailCode::kTopology, 0,
                   "no " + name + " has " + plural(needs.whole_needed, "free GPU", "free GPUs") +
                       " for all " + std::to_string(total_pods) +
                       " pods (most: " + std::to_string(most_free) + ")");
  return failure(j, PlaceFailCode::kTopology, max_pods_placed,
                 "no " + name + " can hold all " + std::to_string(total_pods) + " pods" +
                     (sliced ? " in its slices" : "") + " (best " + name + " fits " +
                     std::to_string(max_pods_placed) + ")");
}

std::optional<Placer::Impl::Outcome> Placer::Impl::place_anywhere(const Job& j,
                                                                  const std::string& where) {
  const bool sliced = !j.topology.slices.empty();
  max_pods_placed = 0;
  if (sliced ? place_gang(filter) : place_all(filter, topology_level(j))) return take_placement();
  if (!sliced) return std::nullopt;
  const TopologySlice& inner = j.topology.slices.back();
  const std::string inner_name = level_name(inner.level);
  return failure(j, PlaceFailCode::kTopology, max_pods_placed,
                 "gang needs " + std::to_string(j.pod_count()) + " pods in slices of " +
                     std::to_string(inner.size) + ", each in one " + inner_name + "; " +
                     std::to_string(max_pods_placed) + " fit" + where);
}

PlaceFailure Placer::Impl::why_not(const Job& j, const std::string& models,
                                   const std::string& where) const {
  const PodShape& pod = shapes[static_cast<size_t>(fail_pod_set)];
  const PodSet& ps = j.pod_sets[static_cast<size_t>(fail_pod_set)];
  std::string what;
  if (pod.shared())
    what = "a " + models + "GPU with " + std::to_string(pod.gpu_milli) + " free milli";
  else if (pod.gpus > 0)
    what = plural(pod.gpus, "free ", "free ") + models + (pod.gpus == 1 ? "GPU" : "GPUs");
  else if (pod.mig_count > 0)
    what = "free MIG slices";
  else
    what = format_canonical(kCpu, pod.cpu_milli) + " CPU and " +
           format_canonical(kMemory, pod.memory_mib) + " memory free";
  const Reasons& r = reasons;
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
  const int32_t total_pods = j.pod_count();
  if (total_pods > 1)
    return failure(j, code, max_pods_placed,
                   "gang needs " + std::to_string(total_pods) + " pods (" +
                       std::to_string(ps.count) + " with " + what + " each" +
                       (ps.max_per_node == 1 ? ", each on a node of its own" : "") + "); " +
                       std::to_string(max_pods_placed) + " fit; " + why + where);
  return failure(j, code, 0, why + where);
}

}  // namespace sluice
