#include "sim/fgd/experiment.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>

#include "core/place/cluster_alloc.h"
#include "core/place/fgd_scorer.h"
#include "core/place/node_set.h"
#include "core/place/placer.h"
#include "sim/fgd/dotprod_scorer.h"
#include "sim/fgd/gpu_clustering_scorer.h"
#include "sim/fgd/gpu_packing_scorer.h"
#include "sim/fgd/random_scorer.h"

namespace sluice::sim::fgd {

namespace {

// Fisher-Yates with the one generator of the run (std::shuffle's algorithm is up to the library;
// this keeps results identical across standard libraries).
void shuffle(std::vector<int32_t>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

// `exp-s<step>[-p<pack weight>][-c<0|1>][-paper]`: FgdScorer's options by hand, to explore
// around fgdpack and fgdmix (docs/placement.md), e.g. exp-s100-p0-c1 is fgdmix's step score.
Result<std::shared_ptr<GpuScorer>> exploration_policy(const std::string& policy) {
  FgdOptions o{FgdScore::kStepPack, 100, false};
  const Error bad{"policy '" + policy + "': expected exp-s<step>[-p<pack>][-c<0|1>][-paper]"};
  for (size_t i = 4; i <= policy.size();) {
    const size_t j = std::min(policy.find('-', i), policy.size());
    const std::string t = policy.substr(i, j - i);
    i = j + 1;
    if (t == "paper" || t == "c0" || t == "c1") {
      if (t == "paper") o.score = FgdScore::kPaper;
      o.skip_incompatible = o.skip_incompatible || t == "c1";
      continue;
    }
    size_t used = 0;
    try {
      if (t.size() > 1 && t[0] == 's') o.step_milli = std::stoll(t.substr(1), &used);
      if (t.size() > 1 && t[0] == 'p') o.pack_weight = std::stod(t.substr(1), &used);
    } catch (const std::logic_error&) {
      return bad;
    }
    if (used == 0 || used + 1 != t.size() || o.step_milli <= 0 || o.pack_weight < 0) return bad;
  }
  return std::shared_ptr<GpuScorer>(std::make_shared<FgdScorer>(o));
}

Result<std::shared_ptr<GpuScorer>> make_policy(const std::string& policy, uint64_t seed,
                                               const std::vector<uint32_t>* classes) {
  if (policy == "random") return std::shared_ptr<GpuScorer>(std::make_shared<RandomScorer>(seed));
  if (policy == "dotprod") return std::shared_ptr<GpuScorer>(std::make_shared<DotProdScorer>());
  if (policy == "gpuclustering")
    return std::shared_ptr<GpuScorer>(std::make_shared<GpuClusteringScorer>(classes));
  if (policy == "gpupacking")
    return std::shared_ptr<GpuScorer>(std::make_shared<GpuPackingScorer>());
  if (policy.rfind("exp-", 0) == 0) return exploration_policy(policy);
  if (auto s = make_scorer_named(policy)) return s;  // sluice's own: the Placer's very objects
  std::string known;
  for (const std::string& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown policy '" + policy + "' (known: " + known + ")"};
}

Job pod_job(JobId id, const TracePod& p) {
  Job j;
  j.id = id;
  PodSet ps;
  ps.gpus = p.num_gpu;
  ps.gpu_milli = p.num_gpu > 0 ? p.gpu_milli : 1000;
  ps.requests[kCpu] = p.cpu_milli;
  ps.requests[kMemory] = p.memory_mib;
  ps.requests[kGpu] = int64_t{p.num_gpu} * p.gpu_milli;
  j.pod_sets.push_back(ps);
  j.allowed_models = p.gpu_spec;
  return j;
}

// The GPUs a pod asks for, in milli-GPU.
int64_t gpu_demand(const TracePod& p) {
  return int64_t{p.num_gpu} * p.gpu_milli;
}

// Step 1 of run_experiment: the arrivals as indices into `pods`, the originals shuffled, then
// random pods dropped or uniform clones added until their demand is `inflate` x `capacity`.
Result<std::vector<int32_t>> arrival_order(const std::vector<TracePod>& pods, int64_t capacity,
                                           double inflate, std::mt19937_64& rng) {
  auto demand = [&](int32_t i) { return gpu_demand(pods[static_cast<size_t>(i)]); };
  std::vector<int32_t> order(pods.size());
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);
  int64_t total = 0;
  for (int32_t i : order) total += demand(i);
  const auto target = static_cast<int64_t>(inflate * static_cast<double>(capacity));
  while (total > target && !order.empty()) {
    const size_t k = rng() % order.size();
    total -= demand(order[k]);
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
  }
  while (total < target) {
    const auto i = static_cast<int32_t>(rng() % pods.size());
    order.push_back(i);
    total += demand(i);
    if (order.size() > pods.size() * 1000) return Error{"the pods request no GPUs: cannot inflate"};
  }
  return order;
}

// Step 2 of run_experiment: the trace's nodes as a cluster, in a seeded random order.
Cluster shuffled_cluster(const std::vector<TraceNode>& nodes, std::mt19937_64& rng) {
  std::vector<int32_t> perm(nodes.size());
  std::iota(perm.begin(), perm.end(), 0);
  shuffle(perm, rng);
  Cluster cluster;
  cluster.name = "openb";
  for (int32_t i : perm) {
    const TraceNode& t = nodes[static_cast<size_t>(i)];
    Node n;
    n.name = t.name;
    n.cpu_milli = t.cpu_milli;
    n.memory_mib = t.memory_mib;
    n.gpus.resize(static_cast<size_t>(t.gpus));
    for (Gpu& g : n.gpus) g.model = t.model;
    cluster.nodes.push_back(std::move(n));
  }
  return cluster;
}

// The original pods (one job each) as the workload the placer's FGD scorer expects.
void set_trace_workload(Placer& placer, const std::vector<TracePod>& pods, double coverage) {
  std::vector<Job> jobs;
  jobs.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i)
    jobs.push_back(pod_job(static_cast<JobId>(i + 1), pods[i]));
  std::vector<const Job*> ptrs;
  for (const Job& j : jobs) ptrs.push_back(&j);
  placer.set_workload_from_jobs(ptrs, coverage);
}

// The curve's samples: per arrived share k (%), the allocated shares (%) seen there.
struct CurveSamples {
  std::array<double, kColumns> sum{};
  std::array<int64_t, kColumns> count{};

  // Records the allocated share after an arrival brought the arrived demand to `arrived`.
  void add(int64_t arrived, int64_t used, int64_t capacity) {
    const auto k = static_cast<size_t>(
        std::llround(100.0 * static_cast<double>(arrived) / static_cast<double>(capacity)));
    if (k < kColumns) {
      sum[k] += 100.0 * static_cast<double>(used) / static_cast<double>(capacity);
      ++count[k];
    }
  }
  // Each column's mean; a column without samples repeats the one before (0 at the start).
  Curve curve() const {
    Curve c{};
    double last = 0;
    for (size_t k = 0; k < kColumns; ++k) {
      if (count[k] > 0) last = sum[k] / static_cast<double>(count[k]);
      c[k] = last;
    }
    return c;
  }
};

}  // namespace

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {
      "random", "dotprod", "gpuclustering", "gpupacking", "bestfit",
      "fgd",    "binpack", "spread",        "fgdpack",    "fgdmix"};
  return names;
}

std::string published_name(const std::string& policy) {
  if (policy == "random") return "01-Random";
  if (policy == "dotprod") return "02-DotProd";
  if (policy == "gpuclustering") return "03-GpuClustering";
  if (policy == "gpupacking") return "04-GpuPacking";
  if (policy == "bestfit") return "05-BestFit";
  if (policy == "fgd") return "06-FGD";
  return "";
}

Result<RunResult> run_experiment(const std::vector<TraceNode>& nodes,
                                 const std::vector<TracePod>& pods, const std::string& policy,
                                 uint64_t seed, const ExperimentOptions& options) {
  if (pods.empty() || nodes.empty()) return Error{"the experiment needs nodes and pods"};
  std::mt19937_64 rng(seed);
  RunResult res;
  res.seed = seed;

  // 1. Workload: shuffled originals, then uniform clones until `inflate` x capacity arrived
  //    (or random pods dropped when the trace alone exceeds it).
  int64_t capacity = 0;
  for (const TraceNode& n : nodes) capacity += int64_t{n.gpus} * kMilliPerGpu;
  if (capacity == 0) return Error{"the nodes have no GPUs"};
  const auto order = arrival_order(pods, capacity, options.inflate, rng);
  if (!order) return Error{order.error()};

  // 2. The cluster, its nodes in a seeded random order: NodeId order is the tie-break order.
  Cluster cluster = shuffled_cluster(nodes, rng);

  // 3. The policy, through the production Placer. Exhaustive policies score every feasible node.
  std::vector<uint32_t> classes(cluster.nodes.size(), 0);
  auto scorer = make_policy(policy, seed, &classes);
  if (!scorer) return Error{scorer.error()};
  PlacerOptions popt;
  popt.max_candidates = 0;
  Placer placer(cluster, *scorer, popt);
  set_trace_workload(placer, pods, options.fgd_coverage);
  ClusterAlloc alloc(cluster);
  const NodeSet all = NodeSet::all(cluster);

  // 4. Arrivals; after each, record (arrived share, allocated share).
  CurveSamples samples;
  int64_t arrived = 0;
  for (size_t a = 0; a < order->size(); ++a) {
    const TracePod& p = pods[static_cast<size_t>((*order)[a])];
    const Job job = pod_job(static_cast<JobId>(a + 1), p);
    auto r = placer.place(job, all, alloc);
    if (auto* placement = std::get_if<Placement>(&r)) {
      alloc.commit(job, *placement);
      ++res.placed;
      PodShape shape;
      shape.gpus = p.num_gpu;
      shape.gpu_milli = p.gpu_milli;
      classes[static_cast<size_t>(placement->pods[0].node)] |= pod_class_bit(shape);
    }
    arrived += gpu_demand(p);
    samples.add(arrived, alloc.gpu_milli_used(), capacity);
  }
  res.curve = samples.curve();
  res.pods = static_cast<int64_t>(order->size());
  res.gpu_milli_capacity = capacity;
  res.gpu_milli_used = alloc.gpu_milli_used();
  return res;
}

}  // namespace sluice::sim::fgd
