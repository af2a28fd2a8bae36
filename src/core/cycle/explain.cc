#include "core/decision/decisions.h"

#include <algorithm>
#include <cstdint>

namespace sluice {

namespace {

std::string describe_code(const PendingReason& reason, const Config& config);

std::string amount(const Config&, ResourceId r, int64_t v) {
  return format_canonical(r, v);
}

std::string flavor_name(const Config& config, FlavorId f) {
  return f >= 0 && static_cast<size_t>(f) < config.flavors.size() ? config.flavors[f].name
                                                                  : std::string("?");
}

// A fallback hint appended to a pending reason: when the job's next flavor opens.
std::string fallback_hint(const PendingReason& reason, const Config& config) {
  if (reason.fallback_flavor < 0) return "";
  return "; may fall back to flavor " + flavor_name(config, reason.fallback_flavor) + " in " +
         format_duration(reason.fallback_in_ns);
}

// Milli GPU-hours as whole GPU-hours, rounded down ("1,012").
std::string gpu_hours(int64_t milli) {
  return format_thousands(milli / 1000);
}

}  // namespace

std::vector<FlavorId> Admission::flavors_used() const {
  std::vector<FlavorId> out;
  auto add = [&](FlavorId f) {
    if (f >= 0 && std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  };
  for (size_t g = 0; g < flavors.size(); ++g) {
    add(flavors[g]);
    for (const auto& per : pod_set_flavors)
      if (g < per.size()) add(per[g]);
  }
  return out;
}

std::string describe_flavors(const Admission& a, const Job& job, const Config& config) {
  auto names = [&](const std::vector<FlavorId>& flavors) {
    std::string out;
    for (FlavorId f : flavors)
      if (f >= 0) out += (out.empty() ? "" : "+") + flavor_name(config, f);
    return out;
  };
  if (a.pod_set_flavors.empty()) {
    const std::string one = names(a.flavors_used());
    return one.empty() ? "" : "flavor " + one;
  }
  std::string out = "flavors";
  for (size_t i = 0; i < a.pod_set_flavors.size() && i < job.pod_sets.size(); ++i)
    out += (i ? ", " : " ") + job.pod_sets[i].name + ": " + names(a.pod_set_flavors[i]);
  return out;
}

bool pod_sets_differ(const std::vector<std::vector<FlavorId>>& per) {
  for (size_t i = 1; i < per.size(); ++i)
    for (size_t g = 0; g < per[i].size(); ++g)
      for (size_t j = 0; j < i; ++j)
        if (g < per[j].size() && per[i][g] >= 0 && per[j][g] >= 0 && per[i][g] != per[j][g])
          return true;
  return false;
}

std::string format_duration(TimeNs ns) {
  if (ns < 0) return "-" + format_duration(-ns);
  const int64_t s = ns / kNsPerSec;
  const int64_t h = s / 3600, m = s / 60 % 60, sec = s % 60;
  std::string out;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  return out + std::to_string(sec) + "s";
}

std::string format_thousands(int64_t v) {
  if (v < 0) return "-" + format_thousands(v == INT64_MIN ? INT64_MAX : -v);
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const PendingReason* summarized_reason(const std::vector<PendingSummary>& summary, QueueId q,
                                       uint64_t shape) {
  auto s = std::lower_bound(summary.begin(), summary.end(), q,
                            [](const PendingSummary& e, QueueId v) { return e.queue < v; });
  if (s == summary.end() || s->queue != q) return nullptr;
  if (s->held) return &s->reason;
  auto it = std::lower_bound(s->by_shape.begin(), s->by_shape.end(), shape,
                             [](const auto& e, uint64_t v) { return e.first < v; });
  return it != s->by_shape.end() && it->first == shape ? &it->second : nullptr;
}

std::string describe(const Admission& a, const Config& config) {
  std::string out;
  if (a.downgraded()) {
    std::vector<std::string> what;
    if (a.preferred_flavor >= 0) {
      FlavorId got = -1;
      for (const auto& g : config.cluster_queues[a.queue].resource_groups)
        if (!g.flavors.empty() && g.flavors.front().flavor == a.preferred_flavor)
          for (FlavorId f : a.flavors)
            for (const auto& fq : g.flavors)
              if (fq.flavor == f) got = f;
      out = "downgraded from " + flavor_name(config, a.preferred_flavor) + " to " +
            flavor_name(config, got);
    }
    if (a.shape >= 0)
      out += std::string(out.empty() ? "downgraded" : " and") + " to fallback shape #" +
             std::to_string(a.shape + 1);
    out += " after " + format_duration(a.waited_ns) + " pending";
  }
  if (!a.pod_set_counts.empty()) {
    std::string counts;
    for (size_t i = 0; i < a.pod_set_counts.size(); ++i)
      counts += (i ? "/" : "") + std::to_string(a.pod_set_counts[i]);
    out += std::string(out.empty() ? "" : "; ") + "partially admitted: " + counts +
           " pods per pod set (it fit neither whole nor by preemption; minCount allows fewer)";
  }
  if (a.best_effort)
    out += std::string(out.empty() ? "" : "; ") +
           "admitted as preemptible best-effort work: its namespace is over its GPU-hour budget";
  return out;
}

std::string describe(const PendingReason& reason, const Config& config) {
  return describe_code(reason, config) + fallback_hint(reason, config);
}

namespace {

std::string describe_code(const PendingReason& reason, const Config& config) {
  const std::string queue = "ClusterQueue " + config.cluster_queues[reason.queue].name;
  const std::string res = config.resources.name(reason.resource);
  const std::string flavor =
      reason.flavor >= 0 ? " on flavor " + config.flavors[reason.flavor].name : "";
  switch (reason.code) {
    case PendingCode::kQuota:
      return queue + ": quota for " + res + flavor + " is exhausted (needs " +
             amount(config, reason.resource, reason.requested) + ", " +
             amount(config, reason.resource, reason.available) +
             " available including what the cohort can lend)" +
             (reason.detail.empty() ? "" : ": " + reason.detail);
    case PendingCode::kNeverFitsQuota:
      if (reason.flavor < 0 && !reason.detail.empty())  // every flavor excluded by the pods
        return queue + ": no flavor for " + res + " is allowed: " + reason.detail;
      if (reason.flavor < 0)
        return queue + " has no quota for " + res +
               " (NoMatchingFlavor); this job can never be admitted there";
      return queue + ": needs " + amount(config, reason.resource, reason.requested) + " of " + res +
             flavor + ", more than the queue can ever get (nominal quota plus borrowing limit)";
    case PendingCode::kPlacement:
      return "quota is available" + flavor + ", but no placement fits now: " + reason.detail;
    case PendingCode::kStrictFifoBlocked:
      return queue + " is StrictFIFO and its head, job " + std::to_string(reason.blocker) +
             ", does not fit yet";
    case PendingCode::kReservation:
      return "starting now would delay the reservation of job " + std::to_string(reason.blocker) +
             " (due to start in " +
             std::to_string(std::max<TimeNs>(0, reason.reserved_in_ns) / kNsPerSec) +
             " s by running jobs' walltimes); it may backfill once it fits before that or "
             "elsewhere";
    case PendingCode::kOverBudget:
      return "namespace " + reason.detail + " used " + gpu_hours(reason.requested) + " of " +
             gpu_hours(reason.available) + " GPU-hours this period; " + queue +
             " rejects work over budget (overBudget: Reject)";
    case PendingCode::kInactive:
      return queue + " is inactive: " + reason.detail + "; its jobs wait until it is defined";
    case PendingCode::kHeldForStarving:
      return "capacity is held for job " + std::to_string(reason.blocker) +
             ", which has waited longer than the aging horizon";
  }
  return "unknown";
}

}  // namespace

}  // namespace sluice
