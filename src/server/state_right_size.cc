// Right-sizing (spec.rightSize: auto; docs/scheduling.md, "Right-sizing"): a recurring job with
// a measured history goes to the smallest GPU model or MIG slice its peak fits with headroom;
// a right-sized run that fails is retried once as requested, not counted as the job's failure.
#include <algorithm>

#include "core/model/right_size.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

// The earlier runs a decision looks at: the newest this many measured ones.
constexpr int32_t kRightSizeHistory = 10;
// Headroom over the history's peak: `sluice advise`'s default.
constexpr double kRightSizeHeadroom = 0.2;

const std::string& image_of(const Job& job) {
  static const std::string kNone;
  return job.pod_sets.empty() ? kNone : job.pod_sets.front().exec().image;
}

// `job` on the decision's shape; the job as it is when `config` lacks that MIG profile now.
Job on_shape(Job job, const RightSizing& rs, const Config& config) {
  ResourceId mig = 0;
  if (rs.mig) {
    const auto id = config.resources.find(std::string(kMigPrefix) + rs.shape);
    if (!id) return job;
    mig = *id;
  }
  GpuShape shape{rs.shape, rs.memory_mib};
  shape.mig = rs.mig;
  return right_sized(job, shape, mig);
}

std::string shape_text(const RightSizing& rs) {
  return rs.shape + " (" + mib_text(rs.memory_mib) + ")";
}

}  // namespace

Job scheduled_job(const JobRecord& r, const Config& config) {
  Job job = aged_job(r);
  return r.right_size && !r.right_size->retried ? on_shape(std::move(job), *r.right_size, config)
                                                : job;
}

// Recurs: an earlier job of the same namespace and name, user and image (the first pod set's;
// "" for a command run on the node) that succeeded with a measured GPU use, among the
// finished jobs the server keeps (--keep-finished-jobs).
std::shared_ptr<RightSizing> ServerState::plan_right_size(const Job& job) const {
  if (!job.right_size) return nullptr;
  const std::set<JobId>* ids = jobs_named(job.namespace_, job.name);
  if (!ids) return nullptr;
  int32_t runs = 0;
  int64_t peak = 0;
  for (auto it = ids->rbegin(); it != ids->rend() && runs < kRightSizeHistory; ++it) {
    const JobRecord* r = find(*it);
    if (!r || r->state != JobState::kSucceeded || r->gpu_use.samples == 0 ||
        r->job.exec().user != job.exec().user || image_of(r->job) != image_of(job))
      continue;
    ++runs;
    peak = std::max(peak, r->gpu_use.peak_mib);
  }
  if (runs == 0) return nullptr;
  const QueueId queue = sched_->resolve(job).queue;
  const auto shape = right_size_shape(job, cluster_shapes(*config_), peak, kRightSizeHeadroom,
                                      covered_mig_profiles(*config_, queue));
  if (!shape) return nullptr;
  auto out = std::make_shared<RightSizing>();
  out->shape = shape->name;
  out->mig = shape->mig;
  out->memory_mib = shape->memory_mib;
  out->runs = runs;
  out->peak_mib = peak;
  return out;
}

Job right_sized_job(const Job& job, const RightSizing* rs, const Config& config) {
  return rs ? on_shape(job, *rs, config) : job;
}

void ServerState::right_size_event(const JobRecord& r, TimeNs now) {
  if (!r.right_size) return;
  const RightSizing& rs = *r.right_size;
  event({{"event", "right-size"},
         {"time", unix_s(now)},
         {"id", r.job.id},
         {"shape", rs.shape},
         {"runs", rs.runs},
         {"peak_mib", rs.peak_mib},
         {"message", "right-sized to " + shape_text(rs) + " from its history of " +
                         std::to_string(rs.runs) + (rs.runs == 1 ? " run" : " runs") + " (peak " +
                         mib_text(rs.peak_mib) + ")"}});
}

// A right-sized run that failed: its pods are stopped and the job queues again as requested
// (requeue_whole, once they are gone). Any failure counts: a CUDA out-of-memory error is an
// exit status like any other, so the smaller GPU is given the benefit of the doubt, once.
bool ServerState::retry_whole(JobRecord& r, const proto::PodExit& e, TimeNs now) {
  if (!r.right_size || r.right_size->retried || r.right_size->resubmit || e.reason == "walltime")
    return false;
  RightSizing& rs = *r.right_size;
  rs.resubmit = true;
  const std::string why = "its right-sized run on " + shape_text(rs) + " failed (" + exit_text(e) +
                          ", peak " + mib_text(r.gpu_use.peak_mib) +
                          "): retried whole, as requested";
  event({{"event", "right-size-retry"}, {"time", unix_s(now)}, {"id", r.job.id}, {"message", why}});
  begin_requeue(r, why, now, "right-size-retry");
  return true;
}

void ServerState::requeue_whole(JobRecord& r, const std::string& reason, TimeNs now) {
  r.right_size->resubmit = false;
  r.right_size->retried = true;  // scheduled_job(): as requested from now on
  sched_->finish(r.job.id, now);
  end_run(r, now, "requeued: " + reason);
  const auto res = sched_->submit(scheduled_job(r, *config_));
  if (res.status != SubmitStatus::kAccepted) {
    set_state(r, JobState::kPending);  // finish_job ends a pending job: nothing to cancel
    finish_job(r, JobState::kFailed, reason + "; could not queue it again: " + res.message, now);
    return;
  }
  set_state(r, JobState::kPending);
  r.queued_ns = now;
  r.pending_since_cycle = cycles_;
  r.reason = reason;
  touch(r);
  dirty_ = true;
}

}  // namespace sluice::server
