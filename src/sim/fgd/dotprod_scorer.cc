#include "sim/fgd/dotprod_scorer.h"

namespace sluice::sim::fgd {

Scored DotProdScorer::evaluate(const NodeView& node, const PodShape& pod,
                               std::span<const int16_t> /*take*/) const {
  const double dot = static_cast<double>(node.cpu_free) / 128000.0 *
                         static_cast<double>(pod.cpu_milli) / 128000.0 +
                     static_cast<double>(node.gpu_free_total()) / 8000.0 *
                         static_cast<double>(pod.gpu_milli_total()) / 8000.0;
  // The artifact's integer score: int(100 * (1 - dot / 2)); ties go to the node order.
  return {static_cast<double>(static_cast<int64_t>(100.0 * (1.0 - dot / 2.0))),
          pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1}};
}

}  // namespace sluice::sim::fgd
