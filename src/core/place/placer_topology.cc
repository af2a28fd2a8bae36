// The placer's topology search: one domain of a level at a time, and slices (Kueue's
// podset-slice annotations): consecutive groups of a gang's pods, each inside one domain of the
// slice's level, up to three layers deep (a block's slice holds whole rack slices).
//
// Slices are placed greedily, slice by slice in pod order: each takes the first candidate
// domain (fewest free GPUs first under bin-pack, most under spread) in which all its pods (or,
// with an inner layer, all its inner slices) fit, after the slices placed before it. A slice
// that fits nowhere fails the gang; earlier slices are not moved to make room.
#include <algorithm>

#include "core/place/placer_impl.h"

namespace sluice {

void Placer::Impl::candidate_domains(int level, const NodeBits& mask, int64_t need,
                                     int32_t max_whole, std::vector<int32_t>* out,
                                     int64_t* most_free) const {
  out->clear();
  const bool most = order == SearchOrder::kMostFreeFirst;
  const int levels = static_cast<int>(cluster().levels.size());
  auto free_of = [&](int32_t d) {
    return level == levels ? int64_t{alloc->whole_gpus_free(d)}
                           : alloc->domain_whole_free(level, d);
  };
  if (level == levels) {
    for (int32_t i = 0; i < mask.word_count(); ++i)
      for (uint64_t w = mask.word(i); w; w &= w - 1) {
        const NodeId n = i * 64 + std::countr_zero(w);
        if (alloc->whole_gpus_free(n) >= need) out->push_back(n);
      }
    *most_free = std::max<int64_t>(*most_free, alloc->max_whole_gpus_free());
  } else {
    const auto& bits = domain_bits[static_cast<size_t>(level)];
    for (int d = 0; d < alloc->domain_count(level); ++d) {
      const int64_t f = alloc->domain_whole_free(level, d);
      *most_free = std::max(*most_free, f);
      if (f < need || alloc->domain_max_whole_free(level, d) < max_whole) continue;
      if (alloc->domain_nodes(level, d).empty() || static_cast<size_t>(d) >= bits.size()) continue;
      out->push_back(d);
    }
  }
  // Fewest free first (most under spread), ties by id: a total order, so a plain sort of
  // (key, id) pairs gives the one answer.
  dom_keys.clear();
  for (int32_t d : *out) dom_keys.emplace_back(most ? -free_of(d) : free_of(d), d);
  std::sort(dom_keys.begin(), dom_keys.end());
  for (size_t i = 0; i < dom_keys.size(); ++i) (*out)[i] = dom_keys[i].second;
}

void Placer::Impl::domain_mask(int level, int32_t d, const NodeBits& mask, NodeBits* out) const {
  if (level == static_cast<int>(cluster().levels.size())) {
    out->clear();
    if (mask.test(d)) out->set(d);
    return;
  }
  *out = mask;
  *out &= domain_bits[static_cast<size_t>(level)][static_cast<size_t>(d)];
}

bool Placer::Impl::place_in_one_domain(int level, int64_t need, int32_t max_whole, int32_t* tried,
                                       int64_t* most_free) {
  std::vector<int32_t> doms;  // a copy: place_gang reuses cand_domains for slices
  candidate_domains(level, filter, need, max_whole, &cand_domains, most_free);
  doms = cand_domains;
  for (int32_t d : doms) {
    domain_mask(level, d, filter, &pref);
    if (!pref.any()) continue;
    ++*tried;
    if (place_gang(pref)) return true;
  }
  return false;
}

bool Placer::Impl::place_gang(const NodeBits& mask) {
  const auto& slices = job->topology.slices;
  if (slices.empty()) return place_all(mask, -1);
  // 1. Pods in slice order; one scratch mask per layer.
  slice_pods.clear();
  for (size_t i = 0; i < job->pod_sets.size(); ++i)
    for (int32_t k = 0; k < job->pod_sets[i].count; ++k)
      slice_pods.emplace_back(static_cast<int32_t>(i), k);
  if (slice_masks.size() < slices.size()) slice_masks.resize(slices.size());
  for (NodeBits& m : slice_masks)
    if (m.size() != mask.size()) m = NodeBits(mask.size());
  // 2. Slices of the outermost layer, each holding the inner ones.
  clear_touched();
  out.clear();
  const bool ok = place_slices(mask, 0, 0, slice_pods.size());
  clear_touched();
  return ok;
}

std::pair<int64_t, int32_t> Placer::Impl::whole_gpus(size_t begin, size_t end) const {
  int64_t need = 0;
  int32_t max_whole = 0;
  for (size_t i = begin; i < end; ++i) {
    const PodShape& pod = shapes[static_cast<size_t>(slice_pods[i].first)];
    if (pod.gpus == 0 || pod.shared()) continue;
    need += pod.gpus;
    max_whole = std::max(max_whole, pod.gpus);
  }
  return {need, max_whole};
}

bool Placer::Impl::place_slices(const NodeBits& mask, size_t layer, size_t begin, size_t end) {
  const TopologySlice& s = job->topology.slices[layer];
  const size_t size = static_cast<size_t>(s.size);
  for (size_t start = begin; start < end; start += size) {
    const size_t stop = std::min(start + size, end);
    const auto [need, max_whole] = whole_gpus(start, stop);
    int64_t most_free = 0;
    candidate_domains(s.level, mask, need, max_whole, &cand_domains, &most_free);
    const std::vector<int32_t> doms = cand_domains;  // inner layers reuse cand_domains
    // The tentative state before this slice, to undo a domain that cannot hold it.
    const std::vector<Tent> saved = touched;
    const size_t placed = out.size();
    bool ok = false;
    for (int32_t d : doms) {
      NodeBits& sub = slice_masks[layer];
      domain_mask(s.level, d, mask, &sub);
      if (!sub.any()) continue;
      ok = layer + 1 < job->topology.slices.size() ? place_slices(sub, layer + 1, start, stop)
                                                   : place_pods(sub, start, stop);
      if (ok) break;
      clear_touched();
      touched = saved;
      for (const Tent& t : touched) touched_bits.set(t.node);
      out.resize(placed);
    }
    if (!ok) return false;
  }
  return true;
}

bool Placer::Impl::place_pods(const NodeBits& mask, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const auto [ps, index] = slice_pods[i];
    const PodShape& pod = shapes[static_cast<size_t>(ps)];
    reasons = Reasons{};
    if (!best_node(pod, room_for(ps, mask))) {
      fail_pod_set = ps;
      return false;
    }
    take_best(pod, ps, index);
    max_pods_placed = std::max(max_pods_placed, static_cast<int32_t>(out.size()));
  }
  return true;
}

}  // namespace sluice
