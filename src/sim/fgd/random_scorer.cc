#include "sim/fgd/random_scorer.h"

namespace sluice::sim::fgd {

Scored RandomScorer::evaluate(const NodeView& node, const PodShape& pod,
                              std::span<const int16_t> /*take*/) const {
  uint64_t h = seed_ ^ (pod.job * 0x9e3779b97f4a7c15ULL) ^
               (static_cast<uint64_t>(node.id) * 0xc2b2ae3d27d4eb4fULL);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return {static_cast<double>(h >> 11),
          pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1}};
}

}  // namespace sluice::sim::fgd
