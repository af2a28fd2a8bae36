#include "core/cycle/decisions.h"

namespace sluice {

namespace {

std::string amount(const Config&, ResourceId r, int64_t v) {
  return format_canonical(r, v);
}

}  // namespace

std::string describe(const PendingReason& reason, const Config& config) {
  const std::string queue = "ClusterQueue " + config.cluster_queues[reason.queue].name;
  const std::string res = config.resources.name(reason.resource);
  const std::string flavor =
      reason.flavor >= 0 ? " on flavor " + config.flavors[reason.flavor].name : "";
  switch (reason.code) {
    case PendingCode::kQuota:
      return queue + ": quota for " + res + flavor + " is exhausted (needs " +
             amount(config, reason.resource, reason.requested) + ", " +
             amount(config, reason.resource, reason.available) +
             " available including what the cohort can lend)";
    case PendingCode::kNeverFitsQuota:
      if (reason.flavor < 0)
        return queue + " has no quota for " + res + "; this job can never be admitted there";
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
    case PendingCode::kHeldForStarving:
      return "capacity is held for job " + std::to_string(reason.blocker) +
             ", which has waited longer than the aging horizon";
  }
  return "unknown";
}

}  // namespace sluice
