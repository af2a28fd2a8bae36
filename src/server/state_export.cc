#include "server/state_export.h"

#include <algorithm>
#include <deque>

#include "config/state/state_writer.h"

namespace sluice::server {

std::string export_state(const ServerState& state, const std::string& config_text, TimeNs now,
                         const std::string& source) {
  const Scheduler& s = state.scheduler();
  std::vector<StateJob> jobs;
  // 1. Running jobs, by id: the job as submitted (its record), the admission it runs under; a
  // right-sized one on the shape its admission holds (scheduled_job()).
  std::deque<Job> sized;
  for (const auto& [id, r] : s.running()) {
    const JobRecord* rec = state.find(id);
    const Job* job = rec ? &rec->job : &r.job;
    if (rec && rec->right_size && !rec->right_size->retried)
      job = &sized.emplace_back(right_sized_job(rec->job, rec->right_size.get(), state.config()));
    jobs.push_back({job, &r.admission, r.start_ns});
  }
  // 2. Pending jobs, in submit order.
  std::vector<const Job*> pending;
  s.for_each_pending([&](const Scheduler::PendingJob& p) { pending.push_back(&p.job); });
  std::sort(pending.begin(), pending.end(), [](const Job* a, const Job* b) {
    return std::pair(a->submit_ns, a->id) < std::pair(b->submit_ns, b->id);
  });
  for (const Job* job : pending) jobs.push_back({job, nullptr, 0});
  return write_state(config_text, {"ServerAuth"}, state.config(), jobs, now, source);
}

}  // namespace sluice::server
