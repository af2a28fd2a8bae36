#include "server/dashboard_history.h"

#include <cmath>
#include <limits>

namespace sluice::server {

double histogram_quantile(const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                          double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0 || q <= 0 || q > 1) return std::numeric_limits<double>::quiet_NaN();
  // 1. The rank of the quantile among the observations (Prometheus: q * total).
  const double rank = q * static_cast<double>(total);
  // 2. The first bucket whose cumulative count reaches it; interpolate within it.
  uint64_t below = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (static_cast<double>(below + counts[i]) >= rank && counts[i] > 0) {
      if (i >= bounds.size()) return bounds.empty() ? 0 : bounds.back();  // +Inf bucket
      const double lo = i == 0 ? 0 : bounds[i - 1];
      const double frac = (rank - static_cast<double>(below)) / static_cast<double>(counts[i]);
      return lo + (bounds[i] - lo) * frac;
    }
    below += counts[i];
  }
  return bounds.empty() ? 0 : bounds.back();
}

DashboardHistory::DashboardHistory(size_t capacity, double interval_s,
                                   std::vector<double> wait_bounds, double window_s)
    : capacity_(capacity < 2 ? 2 : capacity),
      interval_s_(interval_s),
      wait_bounds_(std::move(wait_bounds)),
      window_s_(window_s) {}

void DashboardHistory::add(DashboardSample s) {
  std::lock_guard lk(mu_);
  // 1. The baseline: the newest sample at least window_s older (none: everything since start).
  const DashboardSample* base = nullptr;
  for (auto it = samples_.rbegin(); it != samples_.rend(); ++it)
    if (it->t <= s.t - window_s_) {
      base = &*it;
      break;
    }
  // 2. Per class, the p99 of the admissions between the baseline and now (null: none).
  for (const auto& [pc, counts] : s.wait_counts) {
    std::vector<uint64_t> delta = counts;
    if (base) {
      auto it = base->wait_counts.find(pc);
      if (it != base->wait_counts.end())
        for (size_t i = 0; i < delta.size() && i < it->second.size(); ++i)
          delta[i] = delta[i] >= it->second[i] ? delta[i] - it->second[i] : 0;
    }
    const double p99 = histogram_quantile(wait_bounds_, delta, 0.99);
    s.data["classes"][pc]["wait_p99_s"] =
        std::isnan(p99) ? nlohmann::json(nullptr) : nlohmann::json(p99);
  }
  s.data["t"] = s.t;
  samples_.push_back(std::move(s));
  while (samples_.size() > capacity_) samples_.pop_front();
}

nlohmann::json DashboardHistory::since(double after_t) const {
  nlohmann::json out = nlohmann::json::array();
  {
    std::lock_guard lk(mu_);
    for (const auto& s : samples_)
      if (s.t > after_t) out.push_back(s.data);
  }
  return {{"interval_s", interval_s_},
          {"capacity", capacity_},
          {"window_s", window_s_},
          {"samples", std::move(out)}};
}

size_t DashboardHistory::size() const {
  std::lock_guard lk(mu_);
  return samples_.size();
}

}  // namespace sluice::server
