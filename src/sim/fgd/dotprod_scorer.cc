#include "sim/fgd/dotprod_scorer.h"

namespace sluice::sim::fgd {

Scored DotProdScorer::evaluate(const NodeView& node, const PodShape& pod,
                               std::span<const int16_t> /*take*/) const {
  const double dot = static_cast<double>(node.cpu_free) / 128000.0 * static_cast<double>(pod.cpu_milli) / 128000.0 +
                     static_cast<double>(node.gpu_free_total()) / 8000.0 *
                         static_cast<double>(pod.gpu_milli_total()) / 8000.0;
  return {-dot, pod.shared() ? tightest_shared_gpu(node, pod) : int16_t{-1}};
}

}  // namespace sluice::sim::fgd
