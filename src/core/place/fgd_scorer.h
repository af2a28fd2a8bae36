#pragma once
// Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23).
//
// The expected workload is a list of "typical pods" (request shapes with frequencies p_t). A
// node's fragmentation is the GPU milli a typical pod could NOT use, in expectation:
//   frag(node) = sum_t p_t * ( fits_t ? sum of free milli on GPUs too small for t
//                                     : all free GPU milli )
// where fits_t means: enough free CPU, and at least t.gpus GPUs of an allowed model with
// >= t.gpu_milli free (CPU-only typical pods never "fit" GPU capacity: all of it counts).
// The pod goes where fragmentation grows least: growth = frag(after) - frag(before), turned into
// a score by FgdOptions (below); a shared pod goes to the GPU of that node where it grows least.
//
// Frequencies are fixed-point (1e-6 units) and fragmentation is summed in integers, so equal
// growth on two nodes is an exact tie (broken by node order, as in the paper), never rounding
// noise. Scores are memoised on (node content: free-state hash and GPU models, not the node id;
// pod shape): in a cycle most nodes do not change between two pods, and many nodes are in equal
// states (idle, full), so most evaluations are one table lookup. Not thread-safe (one per
// thread).
#include <cstdint>
#include <vector>

#include "core/place/scorer.h"

namespace sluice {

struct TypicalPod {
  int64_t cpu_milli = 0;
  int32_t gpus = 0;
  int32_t gpu_milli = 0;  // per GPU
  uint64_t model_mask = ~uint64_t{0};
  double freq = 0;  // share of the workload, 0..1
};

// How fragmentation growth (in milli-GPUs, frequency-weighted) becomes a score.
enum class FgdScore : uint8_t {
  // The paper's artifact (a kube-scheduler plugin): int(100 * sigmoid(-growth / 1000)), so
  // growths within a few dozen milli tie and the node order breaks the tie. This coarse
  // score is part of why the published FGD packs well (exact scores reach 94.2, not 95.2).
  kPaper,
  // sluice's "fgdpack": floor(-growth / step_milli) + 0.001 * gpu_share_after: growths within one
  // step tie, and among those the fuller node wins (bin-pack), not an arbitrary node order.
  kStepPack,
  // sluice's "fgdmix" (the default): the score follows the workload mix (set_workload): the
  // paper's score where CPU-only or multi-GPU pods weigh much (there its finer resolution places
  // more), else growth in whole steps of step_milli, ties to the node order (FgdMixRule below).
  kMix,
};

struct FgdOptions {
  FgdScore score = FgdScore::kPaper;
  int64_t step_milli = 100;
  // Leave out of a node's fragmentation the typical pods that may use none of its GPU models.
  // The paper counts all their free milli as fragmented; that term does not depend on the node's
  // state, only on its model, so it biases every pod towards the models fewest pods may use:
  // flexible pods fill the rare models and strand the pods constrained to them.
  bool skip_incompatible = false;
  // kStepPack: weight of the node's GPU share after the pod (the bin-pack term) against one step.
  double pack_weight = 1e-3;
};

// What kMix reads off the typical pods: shares of the workload (frequency-weighted).
struct WorkloadMix {
  double cpu_only = 0;  // of all pods
  double multi = 0;     // of GPU pods: more than one GPU
  double sharing = 0;   // of GPU pods: a fraction of one GPU
  double pinned = 0;    // of GPU pods: restricted to some GPU models
};
WorkloadMix workload_mix(const std::vector<TypicalPod>& typical);
// kMix's choice: true = the paper's score, false = whole steps. Thresholds chosen on the tuning
// mixes of bench/fgd_mixes.sh (docs/placement.md).
bool fgd_mix_uses_paper_score(const WorkloadMix& mix);

class FgdScorer final : public GpuScorer {
 public:
  explicit FgdScorer(FgdOptions options = {});
  std::string_view name() const override {
    return options_.score == FgdScore::kPaper      ? "fgd"
           : options_.score == FgdScore::kStepPack ? "fgdpack"
                                                   : "fgdmix";
  }
  SearchOrder order() const override { return SearchOrder::kExhaustive; }
  Scored evaluate(const NodeView& node, const PodShape& pod,
                  std::span<const int16_t> take) const override;

  void set_workload(std::vector<TypicalPod> typical);
  const std::vector<TypicalPod>& workload() const { return typical_; }
  // The score in use: kMix resolves to kPaper or kStepPack on each set_workload().
  FgdScore effective_score() const { return score_; }
  // Fragmentation of a node state (exposed for tests and metrics).
  double fragmentation(int64_t cpu_free, std::span<const int32_t> gpu_free,
                       std::span<const uint8_t> gpu_model) const;

 private:
  static constexpr double kFreqUnits = 1e6;
  struct Typical {
    int64_t cpu_milli;
    int32_t gpus, gpu_milli;
    uint64_t model_mask;
    int64_t weight;  // freq * kFreqUnits
    bool operator==(const Typical&) const = default;
  };
  int64_t frag_units(int64_t cpu_free, std::span<const int32_t> gpu_free,
                     std::span<const uint8_t> gpu_model) const;
  struct Memo {  // 24 bytes: Scored's fields unpacked around the generation
    uint64_t key = 0;
    double score = 0;
    int16_t shared_gpu = -1;
    uint32_t generation = 0;  // the workload it was computed for (weights_generation_)
  };
  Scored finish(Scored growth, const NodeView& node, const PodShape& pod) const;
  Scored compute(const NodeView& node, const PodShape& pod, std::span<const int16_t> take) const;

  FgdOptions options_;
  FgdScore score_;  // options_.score, or kMix's choice for the current workload
  std::vector<TypicalPod> typical_;
  std::vector<Typical> weights_;
  mutable std::vector<Memo> memo_;
  // Bumped when the weights change: entries of an earlier workload no longer match (clearing
  // the 6 MiB memo instead was a twentieth of a long simulation that refreshes the workload).
  uint32_t weights_generation_ = 1;
};

// The most frequent shapes that together cover `coverage` (0..1) of `pods`, with their
// frequencies (share of all pods, not renormalised). Ties in frequency break by the shape itself,
// so the result does not depend on input order beyond the counts.
std::vector<TypicalPod> typical_pods(const std::vector<TypicalPod>& pods, double coverage);

}  // namespace sluice
