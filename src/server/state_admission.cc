// The state's side of backpressure per namespace (namespace_backpressure.h): every change of a
// record's state goes through set_state, which keeps the pending jobs per namespace counted.
#include "server/state.h"

namespace sluice::server {

void ServerState::set_state(JobRecord& r, JobState s) {
  if (r.state == s) return;
  if (r.state == JobState::kPending) backpressure_.count_pending(r.job.namespace_, -1);
  if (s == JobState::kPending) backpressure_.count_pending(r.job.namespace_, +1);
  r.state = s;
}

void ServerState::recount_pending() {
  backpressure_.clear_pending();
  for (const auto& [id, r] : records_)
    if (r.state == JobState::kPending) backpressure_.count_pending(r.job.namespace_, +1);
}

std::optional<SubmitOutcome> ServerState::backpressure(const std::map<std::string, int64_t>& wanted,
                                                       TimeNs now) {
  auto refused = backpressure_.check(wanted, now);
  if (!refused) return std::nullopt;
  metrics_.rejected[refused->metric] += 1;
  return SubmitOutcome{refused->status,       refused->error, {refused->detail}, {}, 0,
                       refused->retry_after_s};
}

}  // namespace sluice::server
