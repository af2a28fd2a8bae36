#include "core/cycle/budget_ledger.h"

#include <algorithm>

namespace sluice {

BudgetLedger::BudgetLedger(const Config& config) : config_(config) {
  state_.resize(config.budgets.size());
  for (size_t b = 0; b < config.budgets.size(); ++b)
    of_namespace_.emplace(config.budgets[b].namespace_, static_cast<int32_t>(b));
}

int32_t BudgetLedger::index_of(const std::string& ns) const {
  auto it = of_namespace_.find(ns);
  return it == of_namespace_.end() ? -1 : it->second;
}

void BudgetLedger::add_running(const Job& job, const Placement& placement) {
  if (const int32_t b = index_of(job.namespace_); b >= 0)
    state_[static_cast<size_t>(b)].rate += rate(b, placement);
}

void BudgetLedger::remove_running(const Job& job, const Placement& placement) {
  if (const int32_t b = index_of(job.namespace_); b >= 0)
    state_[static_cast<size_t>(b)].rate -= rate(b, placement);
}

void BudgetLedger::restore_running(const Job& job, const Placement& placement, TimeNs start_ns) {
  const int32_t b = index_of(job.namespace_);
  if (b < 0) return;
  State& st = state_[static_cast<size_t>(b)];
  const Int128 r = rate(b, placement);
  if (!st.started) {
    st.at = start_ns;
    st.started = true;
  } else if (start_ns < st.at) {
    const TimeNs from =
        std::max(start_ns, period_start(config_.budgets[static_cast<size_t>(b)], st.at));
    if (from < st.at) st.used += r * (st.at - from);
  } else {
    st.used = used(b, start_ns);
    st.at = start_ns;
  }
}

TimeNs BudgetLedger::period_start(const Budget& b, TimeNs t) const {
  const TimeNs period = std::max<TimeNs>(1, b.period_ns);
  const TimeNs d = t - b.anchor_ns;
  TimeNs k = d / period;
  if (d % period < 0) --k;  // floor, also before the anchor
  return b.anchor_ns + k * period;
}

BudgetLedger::Int128 BudgetLedger::used(int32_t b, TimeNs now) const {
  const State& s = state_[static_cast<size_t>(b)];
  if (!s.started || now <= s.at) return s.used;
  // The rate was constant since `at`: a period boundary in between restarts the count there.
  const TimeNs p = period_start(config_.budgets[static_cast<size_t>(b)], now);
  if (s.at < p) return s.rate * (now - p);
  return s.used + s.rate * (now - s.at);
}

BudgetLedger::Int128 BudgetLedger::rate(int32_t b, const Placement& placement) const {
  // Weight-milli x GPU-milli per ns: each GPU share weighted by its model.
  const Budget& budget = config_.budgets[static_cast<size_t>(b)];
  Int128 rate = 0;
  for (const auto& pod : placement.pods) {
    const Node& node = config_.cluster.nodes[static_cast<size_t>(pod.node)];
    for (const auto& g : pod.gpus)
      rate += static_cast<Int128>(g.milli) *
              budget.weight_milli(node.gpus[static_cast<size_t>(g.gpu)].model);
  }
  return rate;
}

BudgetLedger::Int128 BudgetLedger::limit(const Budget& b) {
  // gpu_hours_milli / 1000 GPU-hours x 1000 GPU-milli x 1000 weight-milli x 3600e9 ns.
  return static_cast<Int128>(b.gpu_hours_milli) * 1000 * 3600 * kNsPerSec;
}

void BudgetLedger::advance(TimeNs now) {
  for (size_t b = 0; b < state_.size(); ++b) {
    State& s = state_[b];
    s.used = used(static_cast<int32_t>(b), now);
    if (!s.started || now > s.at) s.at = now;
    s.started = true;
  }
}

std::vector<BudgetUsage> BudgetLedger::usage(TimeNs now) const {
  std::vector<BudgetUsage> out;
  for (size_t b = 0; b < config_.budgets.size(); ++b) {
    const Budget& budget = config_.budgets[b];
    BudgetUsage u;
    u.namespace_ = budget.namespace_;
    u.used_milli_gpu_hours = used_milli_gpu_hours(static_cast<int32_t>(b), now);
    u.budget_milli_gpu_hours = budget.gpu_hours_milli;
    u.period_start_ns = period_start(budget, now);
    u.period_end_ns = u.period_start_ns + budget.period_ns;
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<BudgetSnapshot> BudgetLedger::snapshot(TimeNs now) const {
  std::vector<BudgetSnapshot> out;
  for (size_t b = 0; b < config_.budgets.size(); ++b) {
    Int128 v = used(static_cast<int32_t>(b), now);
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
      v /= 10;
    } while (v > 0);
    out.push_back({config_.budgets[b].namespace_, now, std::move(digits)});
  }
  return out;
}

void BudgetLedger::restore(const std::vector<BudgetSnapshot>& snapshot, TimeNs now) {
  for (const auto& snap : snapshot) {
    auto it = of_namespace_.find(snap.namespace_);
    // (36 digits stay well inside __int128, whose maximum has 39.)
    if (it == of_namespace_.end() || snap.used.empty() || snap.used.size() > 36 || snap.at_ns > now)
      continue;
    const Budget& budget = config_.budgets[static_cast<size_t>(it->second)];
    if (period_start(budget, snap.at_ns) != period_start(budget, now)) continue;
    Int128 total = 0;
    bool ok = true;
    for (char c : snap.used) {
      if (c < '0' || c > '9') {
        ok = false;
        break;
      }
      total = total * 10 + (c - '0');
    }
    if (!ok) continue;
    State& st = state_[static_cast<size_t>(it->second)];
    st.used = total;
    st.at = snap.at_ns;
    st.started = true;
  }
}

std::optional<BudgetUsage> BudgetLedger::usage(const std::string& ns, TimeNs now) const {
  auto it = of_namespace_.find(ns);
  if (it == of_namespace_.end()) return std::nullopt;
  return usage(now)[static_cast<size_t>(it->second)];
}

int64_t BudgetLedger::used_milli_gpu_hours(int32_t b, TimeNs now) const {
  constexpr Int128 kUnitsPerMilliGpuHour = static_cast<Int128>(3600) * kNsPerSec * 1000;
  return static_cast<int64_t>(used(b, now) / kUnitsPerMilliGpuHour);
}

bool BudgetLedger::over(int32_t b, TimeNs now) const {
  return used(b, now) >= limit(config_.budgets[static_cast<size_t>(b)]);
}

}  // namespace sluice
