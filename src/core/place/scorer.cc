#include "core/place/scorer.h"

#include "core/place/bestfit_scorer.h"
#include "core/place/binpack_scorer.h"
#include "core/place/fgd_scorer.h"
#include "core/place/spread_scorer.h"

namespace sluice {

void PodShape::compute_key() {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&](uint64_t v) {
    h ^= v;
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
  };
  add(static_cast<uint64_t>(cpu_milli));
  add(static_cast<uint64_t>(memory_mib));
  add(static_cast<uint64_t>(gpus));
  add(static_cast<uint64_t>(gpu_milli));
  add(model_mask);
  for (int i = 0; i < mig_count; ++i)
    add((uint64_t{mig[static_cast<size_t>(i)].first} << 32) ^
        static_cast<uint64_t>(mig[static_cast<size_t>(i)].second));
  key = h | 1;  // never 0
}

int16_t tightest_shared_gpu(const NodeView& node, const PodShape& pod) {
  int16_t best = -1;
  for (size_t g = 0; g < node.gpu_free.size(); ++g) {
    const int32_t f = node.gpu_free[g];
    if (f < pod.gpu_milli || !pod.model_ok(node.gpu_model[g])) continue;
    if (best < 0 || f < node.gpu_free[static_cast<size_t>(best)]) best = static_cast<int16_t>(g);
  }
  return best;
}

int16_t loosest_shared_gpu(const NodeView& node, const PodShape& pod) {
  int16_t best = -1;
  for (size_t g = 0; g < node.gpu_free.size(); ++g) {
    const int32_t f = node.gpu_free[g];
    if (f < pod.gpu_milli || !pod.model_ok(node.gpu_model[g])) continue;
    if (best < 0 || f > node.gpu_free[static_cast<size_t>(best)]) best = static_cast<int16_t>(g);
  }
  return best;
}

int cpu_only_tier(const NodeView& node) {
  if (node.gpu_free.empty()) return 2;
  return node.gpu_free_total() == 0 ? 1 : 0;
}

double gpu_share_after(const NodeView& node, const PodShape& pod) {
  if (node.gpu_capacity == 0) return 0;
  const double cap = static_cast<double>(node.gpu_capacity) * kMilliPerGpu;
  return (cap - static_cast<double>(node.gpu_free_total() - pod.gpu_milli_total())) / cap;
}

double cpu_share_after(const NodeView& node, const PodShape& pod) {
  if (node.cpu_capacity <= 0) return 1;
  return static_cast<double>(node.cpu_capacity - node.cpu_free + pod.cpu_milli) /
         static_cast<double>(node.cpu_capacity);
}

std::shared_ptr<GpuScorer> make_scorer(ScoringPolicy policy) {
  switch (policy) {
    case ScoringPolicy::kBinPack:
      return std::make_shared<BinPackScorer>();
    case ScoringPolicy::kSpread:
      return std::make_shared<SpreadScorer>();
    case ScoringPolicy::kBestFit:
      return std::make_shared<BestFitScorer>();
    case ScoringPolicy::kFgd:
      return std::make_shared<FgdScorer>();
    case ScoringPolicy::kFgdPack:
      return std::make_shared<FgdScorer>(FgdOptions{FgdScore::kStepPack, 100});
    case ScoringPolicy::kFgdMix:
      return std::make_shared<FgdScorer>(FgdOptions{FgdScore::kMix, 100, true, 0});
  }
  return std::make_shared<BinPackScorer>();
}

std::shared_ptr<GpuScorer> make_scorer_named(std::string_view name) {
  for (ScoringPolicy p : {ScoringPolicy::kBinPack, ScoringPolicy::kSpread, ScoringPolicy::kBestFit,
                          ScoringPolicy::kFgd, ScoringPolicy::kFgdPack, ScoringPolicy::kFgdMix})
    if (name == scoring_policy_name(p)) return make_scorer(p);
  return nullptr;
}

std::string_view scoring_policy_name(ScoringPolicy policy) {
  switch (policy) {
    case ScoringPolicy::kBinPack:
      return "binpack";
    case ScoringPolicy::kSpread:
      return "spread";
    case ScoringPolicy::kBestFit:
      return "bestfit";
    case ScoringPolicy::kFgd:
      return "fgd";
    case ScoringPolicy::kFgdPack:
      return "fgdpack";
    case ScoringPolicy::kFgdMix:
      return "fgdmix";
  }
  return "binpack";
}

}  // namespace sluice
