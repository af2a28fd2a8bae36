#include "core/order/fairness_yield.h"

#include <algorithm>

namespace sluice {

bool RecentWaits::record(int32_t priority, TimeNs wait_ns) {
  if (!enabled()) return false;
  Class& c = classes_[priority];
  if (c.ring.size() < kSamples) {
    c.ring.push_back(std::max<TimeNs>(0, wait_ns));
  } else {
    c.ring[c.next] = std::max<TimeNs>(0, wait_ns);
    c.next = (c.next + 1) % kSamples;
  }
  if (++c.since < kRecompute) return false;
  c.since = 0;
  // Nearest rank: the smallest wait with at least P% of the recorded ones at or below it.
  std::vector<TimeNs> sorted = c.ring;
  const size_t rank = (static_cast<size_t>(percentile_) * sorted.size() + 99) / 100;
  const size_t k = std::clamp<size_t>(rank, 1, sorted.size()) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  const TimeNs was = c.threshold;
  c.threshold = sorted[k];
  return c.threshold != was;
}

TimeNs RecentWaits::window(int32_t priority, TimeNs window_ns) const {
  if (!enabled()) return window_ns;
  auto it = classes_.find(priority);
  if (it == classes_.end() || it->second.threshold == kNone) return window_ns;
  return std::min(window_ns, it->second.threshold + 1);
}

std::vector<TimeNs> RecentWaits::windows(TimeNs window_ns) const {
  std::vector<TimeNs> out;
  for (const auto& [priority, c] : classes_)
    if (c.threshold != kNone) out.push_back(std::min(window_ns, c.threshold + 1));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sluice
