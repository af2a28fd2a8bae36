#pragma once
// Gang placement: find nodes (and GPUs, MIG slices) for ALL pods of a job, or say why not.
//
// place() is pure with respect to the cluster state (the ClusterAlloc is only read; a gang's
// tentative state lives in the Placer's scratch space) and deterministic: the same job, node set
// and state give the same placement. Candidate order is total: (search-order rank, score, NodeId).
// A Placer is not thread-safe (scratch space and the FGD memo are per Placer).
//
// Search, per pod (pods of a gang go largest first):
//   1. The candidate mask: node set AND ready AND allowed GPU model (a bitmap, 64 nodes a word).
//   2. Buckets in the scorer's order: for k whole GPUs, nodes with exactly c free whole GPUs,
//      c = k..max (bin-pack) or max..k (spread); for a shared pod, nodes whose largest partly used
//      GPU fits it, then nodes with whole free GPUs; for MIG, nodes with a free slice of each
//      profile; for CPU-only pods, nodes without GPUs, then GPU nodes with no free GPU, then the
//      rest. Monotone scorers (bin-pack, spread) stop in the first bucket with a fit after scoring
//      at most `candidates_per_bucket` feasible nodes; others score every feasible node (or up to
//      `max_candidates`).
//   3. Each candidate is checked exactly (CPU, memory, GPU model, GPU count with NVLink/NUMA/PCIe
//      locality, shared milli, MIG slices) and scored.
// Topology: a required level tries one domain at a time (domains whose free-GPU summary cannot
// hold the gang are skipped in O(1)), fullest first under bin-pack; a preferred level first tries
// that, then spills, preferring domains the gang already uses.
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/config.h"
#include "core/model/job.h"
#include "core/place/cluster_alloc.h"
#include "core/place/fgd_scorer.h"
#include "core/place/node_set.h"
#include "core/place/placement.h"
#include "core/place/scorer.h"
#include "core/place/typical_pods.h"

namespace sluice {

struct PlacerOptions {
  // Monotone scorers: feasible nodes scored in the first bucket that has one.
  int32_t candidates_per_bucket = 8;
  // Exhaustive scorers: feasible nodes scored per pod (in bin-pack bucket order); 0 = all.
  int32_t max_candidates = 0;
  // When set, every MIG resource of the catalog is placed as slices; otherwise only resources
  // that appear as a slice profile in the cluster are (other extended resources are not tracked).
  const ResourceCatalog* resources = nullptr;
};

// One shape of the expected workload (FGD's "typical pods").
struct WorkloadShape {
  int64_t cpu_milli = 0;
  int32_t gpus = 0;
  int32_t gpu_milli = 0;
  std::vector<std::string> allowed_models;  // empty: any
  double freq = 0;                          // 0..1
};

// spec.alignEnds: bins: the unit of the extension bins (bin k+1 holds [2^(k-1), 2^k) units).
inline constexpr TimeNs kEndBinNs = 60 * kNsPerSec;

class Placer {
 public:
  Placer(const Cluster& cluster, ScoringPolicy policy, PlacerOptions options = {});
  // A custom scorer (the FGD experiment's baselines).
  Placer(const Cluster& cluster, std::shared_ptr<GpuScorer> scorer, PlacerOptions options = {});
  ~Placer();
  Placer(const Placer&) = delete;
  Placer& operator=(const Placer&) = delete;

  std::variant<Placement, PlaceFailure> place(const Job& job, const NodeSet& nodes,
                                              const ClusterAlloc& alloc) const;

  // FGD's expected workload; ignored by the other policies.
  void set_workload(const std::vector<WorkloadShape>& shapes);
  // The typical pods of `jobs` (one entry per pod, shapes covering `coverage` of them).
  void set_workload_from_jobs(const std::vector<const Job*>& jobs, double coverage = 0.95);
  // The same kept up to date by the caller as jobs come and go (a scheduler: no walk over every
  // job per refresh): adds (sign 1) or takes back (-1) a job's pods; shapes whose count falls to
  // 0 are dropped, so the counts equal those of a walk over the jobs counted. Whether it needs
  // them at all: uses_workload().
  void count_workload(const Job& job, int64_t sign, PodShapeCounts& counts) const;
  void set_workload_from_counts(const PodShapeCounts& counts, double coverage = 0.95);
  bool uses_workload() const;
  // End alignment (SchedulerPolicy spec.alignEnds, docs/placement.md): `node_end` gives each
  // node's latest expected end of the work running on it (0: idle), `now` the time a job placed
  // would start. Among nodes of equal rank and score, a job with a walltime goes to the node
  // whose end is the closest at or after its own, else to the one that ends the latest before
  // it: nodes then drain together and whole nodes come free for multi-GPU jobs. Null: off.
  // The vector must outlive the calls to place(). Null also forgets the default walltime.
  // With `bins` (spec.alignEnds: bins) the alignment comes first: candidates rank by how long
  // the job would keep the node busy past its running work, in power-of-two bins of minutes
  // (kEndBinNs; none when the node's work outlasts the job, the first bin), then by the GPU
  // scoring and the tie-break above; every feasible node is scored, for any scorer.
  void set_node_ends(const std::vector<TimeNs>* node_end, TimeNs now, bool bins = false) const;
  // The walltime end alignment assumes for a job placed that gives none (its queue's
  // defaultWalltime; 0: such a job is not aligned).
  void set_default_walltime(TimeNs walltime) const;

  const GpuScorer& scorer() const { return *scorer_; }
  // Bitmask of model indexes for names (unknown names add nothing); all ones when empty.
  uint64_t model_mask(const std::vector<std::string>& models) const;
  const std::vector<std::string>& models() const { return models_; }

 private:
  struct Impl;
  const Cluster* cluster_;
  std::shared_ptr<GpuScorer> scorer_;
  PlacerOptions options_;
  std::vector<std::string> models_;
  std::unique_ptr<Impl> impl_;  // static topology tables and mutable scratch
};

}  // namespace sluice
