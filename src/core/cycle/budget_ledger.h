#pragma once
// GPU-hour budgets per namespace: the weighted GPU time of each budgeted namespace's running
// work, accrued exactly (integers) in the period that contains a time. The Scheduler tells it
// when running work starts and stops; a cycle asks whether a namespace is over.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/place/placement.h"

namespace sluice {

// Budget usage of a namespace in the period that contains a time, for metrics.
struct BudgetUsage {
  std::string namespace_;
  int64_t used_milli_gpu_hours = 0;  // weighted: a GPU-hour of model m counts weight(m)
  int64_t budget_milli_gpu_hours = 0;
  TimeNs period_start_ns = 0;
  TimeNs period_end_ns = 0;
  bool over() const { return used_milli_gpu_hours >= budget_milli_gpu_hours; }
};
// Exact accrued usage of a namespace at a time, as decimal text (weight-milli x GPU-milli x ns):
// what carries budgets across a restart or a reconfiguration.
struct BudgetSnapshot {
  std::string namespace_;
  TimeNs at_ns = 0;
  std::string used;
};

class BudgetLedger {
 public:
  explicit BudgetLedger(const Config& config);  // config must outlive the ledger

  bool empty() const { return state_.empty(); }
  // Index into Config::budgets of a namespace's budget; -1: none.
  int32_t index_of(const std::string& namespace_) const;
  // Running work of a budgeted namespace starts or stops accruing (no-op for others).
  void add_running(const Job& job, const Placement& placement);
  void remove_running(const Job& job, const Placement& placement);
  // Running work restored after a restart: its GPU time since start_ns (this period only)
  // counts, then add_running() as for any start.
  void restore_running(const Job& job, const Placement& placement, TimeNs start_ns);
  // Accrues usage up to `now`.
  void advance(TimeNs now);
  // Budget b (index into Config::budgets) at `now`: used, in milli GPU-hours, and whether over.
  int64_t used_milli_gpu_hours(int32_t b, TimeNs now) const;
  bool over(int32_t b, TimeNs now) const;
  std::vector<BudgetUsage> usage(TimeNs now) const;  // Config::budgets order
  std::optional<BudgetUsage> usage(const std::string& namespace_, TimeNs now) const;
  std::vector<BudgetSnapshot> snapshot(TimeNs now) const;
  // Entries of an earlier period, or for namespaces without a budget now, are ignored.
  void restore(const std::vector<BudgetSnapshot>& snapshot, TimeNs now);

 private:
  __extension__ typedef __int128 Int128;
  // Accrued usage of one budget: `used` (weight-milli x GPU-milli x ns) in the period of `at`,
  // and the rate of the namespace's running jobs since `at`.
  struct State {
    Int128 used = 0;
    Int128 rate = 0;
    TimeNs at = 0;
    bool started = false;
  };
  TimeNs period_start(const Budget& b, TimeNs t) const;
  Int128 used(int32_t b, TimeNs now) const;
  Int128 rate(int32_t b, const Placement& placement) const;
  static Int128 limit(const Budget& b);

  const Config& config_;
  std::map<std::string, int32_t> of_namespace_;
  std::vector<State> state_;  // per Config::budgets
};

}  // namespace sluice
