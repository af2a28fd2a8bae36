#pragma once
#include <cstdint>
#include <vector>

#include "core/model/job.h"
#include "core/place/cluster_alloc.h"
#include "core/place/placement.h"

namespace sluice {

// A necessary condition for placing a one-pod-set job, kept up to date as victims are
// released and put back: how many of its pods the free GPUs of ready nodes could hold, at
// most. While it is below the pod count no placement exists, so the placer is not asked; this
// is what keeps a victim search over scattered small jobs cheap. Topology, NVLink, CPU and
// memory only make placement harder, so skipping on this bound never skips a fit.
class PodRoom {
 public:
  PodRoom(const Job& job, const ClusterAlloc& alloc) : alloc_(alloc) {
    if (job.pod_sets.size() != 1) return;
    const PodSet& ps = job.pod_sets.front();
    for (int r = 0; r < kMaxResources; ++r)
      if (r != kGpu && r != kCpu && r != kMemory && ps.requests[r] > 0) return;  // MIG etc.
    if (ps.gpus <= 0 || ps.gpu_milli <= 0 || (ps.gpus > 1 && ps.gpu_milli != 1000)) return;
    gpus_ = ps.gpus;
    milli_ = ps.gpu_milli;
    need_ = ps.count;
    per_node_.assign(static_cast<size_t>(alloc.node_count()), 0);
    for (NodeId n = 0; n < alloc.node_count(); ++n) {
      per_node_[static_cast<size_t>(n)] = room(n);
      total_ += per_node_[static_cast<size_t>(n)];
    }
    active_ = true;
  }
  // Recount node n after its free capacity changed.
  void touch(NodeId n) {
    if (!active_) return;
    auto& v = per_node_[static_cast<size_t>(n)];
    total_ -= v;
    v = room(n);
    total_ += v;
  }
  void touch(const Placement& p) {
    for (const auto& pod : p.pods) touch(pod.node);
  }
  bool may_fit() const { return !active_ || total_ >= need_; }
  // An upper bound of the same were GPU milli released on nodes at once (`each` yields
  // (node, milli) pairs), computed on the side (the state is not changed): per touched node, its
  // free GPU milli after the release, as if it could be pooled. Releasing less only leaves less
  // room, so when this fails no subset of the releases can make the job fit.
  template <class Each>
  bool may_fit_if_released(Each&& each) const {
    if (!active_) return true;
    std::vector<int64_t> extra(per_node_.size(), -1);
    std::vector<NodeId> touched;
    each([&](NodeId n, int64_t milli) {
      int64_t& e = extra[static_cast<size_t>(n)];
      if (e < 0) {
        e = 0;
        touched.push_back(n);
      }
      e += milli;
    });
    int64_t total = total_;
    for (NodeId n : touched) {
      total -= per_node_[static_cast<size_t>(n)];
      if (!alloc_.ready(n)) continue;
      int64_t free = extra[static_cast<size_t>(n)];
      for (int32_t f : alloc_.gpu_free_span(n)) free += f;
      total += gpus_ > 1 || milli_ == 1000 ? free / 1000 / gpus_ : free / milli_;
    }
    return total >= need_;
  }

 private:
  int64_t room(NodeId n) const {
    if (!alloc_.ready(n)) return 0;
    if (gpus_ > 1 || milli_ == 1000) return alloc_.whole_gpus_free(n) / gpus_;
    int64_t pods = 0;
    for (int32_t f : alloc_.gpu_free_span(n)) pods += f / milli_;
    return pods;
  }
  const ClusterAlloc& alloc_;
  bool active_ = false;
  int32_t gpus_ = 0, milli_ = 0;
  int64_t need_ = 0, total_ = 0;
  std::vector<int64_t> per_node_;
};

}  // namespace sluice
