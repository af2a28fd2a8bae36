// ServerState's submissions: the encoding done before the state lock is taken (prepare), the
// refusal of images no node can run, and submit(), which gives the new jobs their ids, hands
// them to the scheduler and keeps their records, all or nothing.
#include <algorithm>

#include "core/model/deadline.h"
#include "server/job_codec.h"
#include "server/json_text.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

namespace {

// Per-pod view of a job: pod sets flattened in order (the order of Placement::pods).
int32_t total_pods(const Job& job) {
  return job.pod_count();
}

// The submit event of the log, less the fields assigned at submission (time, id, name).
std::string submit_event_body(const Job& job, const Config& config) {
  const auto& ps = job.pod_sets.front();
  json e = json({{"event", "submit"},
                 {"namespace", job.namespace_},
                 {"queue", job.queue},
                 {"user", job.exec().user},
                 {"priority_class", job.exec().priority_class},
                 {"preemptible", job.preemptible},
                 {"pods", total_pods(job)},
                 {"gpus", ps.gpus},
                 {"gpu_milli", ps.gpu_milli},
                 {"cpu_milli", ps.requests[kCpu]},
                 {"memory_mib", ps.requests[kMemory]},
                 {"walltime", job.walltime_ns > 0 ? json(unix_s(job.walltime_ns)) : json(nullptr)},
                 {"job_gpu_milli", job_gpu_milli(job, config)}});
  if (job.exec().array_task >= 0) {
    e["array_job"] = job.exec().array_job;
    e["array_task"] = job.exec().array_task;
  }
  return proto::dump_json(e);
}

std::string submit_event_with(const Job& job, TimeNs now, std::string_view body) {
  std::string out = "{";
  json_text::key(out, "time", true);
  out += proto::dump_json(json(unix_s(now)));
  json_text::key(out, "id");
  json_text::num(out, static_cast<int64_t>(job.id));
  json_text::key(out, "name");
  json_text::str(out, job.name);
  out += ',';
  out += body.substr(1);
  return out;
}

// The refusal of a whole submission before any of its jobs is kept (400).
SubmitOutcome nothing_submitted(std::string why) {
  return SubmitOutcome{400, std::move(why), {"nothing was submitted"}, {}, 0};
}

}  // namespace

PreparedSubmission ServerState::prepare(const std::vector<Job>& jobs,
                                        std::shared_ptr<const Config> config) {
  PreparedSubmission p;
  p.job_bodies.reserve(jobs.size());
  p.event_bodies.reserve(jobs.size());
  for (const Job& j : jobs) {
    p.job_bodies.push_back(encode_job_body(j, *config));
    p.event_bodies.push_back(submit_event_body(j, *config));
  }
  p.config = std::move(config);
  return p;
}

// A job with an image runs in a container, on a node whose agent has a container runtime,
// unless its ClusterQueue lets its command run on the node itself. Refused ("" otherwise) when
// no registered node has one: it could only fail where it lands.
std::string ServerState::image_refusal(const std::vector<Job>& jobs) const {
  // The nodes are looked at only for a job that needs a runtime (a submission holds the state
  // lock; most have no image).
  auto runtime_somewhere = [this] {
    return std::any_of(nodes_.begin(), nodes_.end(),
                       [](const auto& n) { return n.registered && !n.container_runtime.empty(); });
  };
  for (const Job& job : jobs)
    for (const PodSet& ps : job.pod_sets) {
      if (ps.exec().image.empty()) continue;
      const auto lq = config_->local_queue_of(job);
      if (!lq) continue;  // the scheduler says what is wrong with the queue
      const auto& cq = config_->cluster_queues[static_cast<size_t>(
          config_->local_queues[static_cast<size_t>(*lq)].cluster_queue)];
      if (runtime_somewhere()) continue;
      if (cq.run_images_on_host && ps.exec().image_args_only)
        return "job \"" + job.name + "\" gives its image " + ps.exec().image +
               " only `args`, which follow the image's entrypoint, but no node runs containers: "
               "on the node itself (spec.sluice.runImagesOnHost) there is no entrypoint; give "
               "the container a `command`";
      if (cq.run_images_on_host) continue;
      return "job \"" + job.name + "\" asks for image " + ps.exec().image +
             " but no node runs containers (agents started without --container-runtime), and "
             "ClusterQueue " +
             cq.name +
             " does not let images' commands run on the node (spec.sluice.runImagesOnHost)";
    }
  return {};
}

// The refusal of a submission for one of its jobs, which the scheduler refused: the status and
// message for its reason, counted in the metrics.
SubmitOutcome ServerState::job_refused(const Job& job, const SubmitResult& res, size_t jobs) {
  SubmitOutcome out;
  switch (res.status) {
    case SubmitStatus::kInvalid:
      out.status = 400;
      break;
    case SubmitStatus::kUnknownQueue:
      out.status = 404;
      break;
    case SubmitStatus::kDuplicate:
      out.status = 409;
      break;
    case SubmitStatus::kPendingCap:
      out.status = 429;
      break;
    case SubmitStatus::kNotSelected:
      out.status = 403;
      break;
    case SubmitStatus::kAccepted:
      break;
  }
  static const char* kReason[] = {"",          "invalid",     "unknown-queue",
                                  "duplicate", "pending-cap", "namespace-not-selected"};
  metrics_.rejected[kReason[static_cast<int>(res.status)]] += 1;
  out.error = (jobs > 1 ? "job \"" + job.name + "\": " : std::string()) + res.message;
  if (res.status == SubmitStatus::kUnknownQueue) {
    std::string known;
    for (const auto& name : config_->local_queue_names(job.namespace_))
      known += (known.empty() ? "" : ", ") + name;
    out.details.push_back("LocalQueues in namespace \"" + job.namespace_ +
                          "\": " + (known.empty() ? "none" : known));
  }
  if (jobs > 1) out.details.push_back("nothing was submitted");
  return out;
}

// Gives the submission's jobs their ids and names and hands them to the scheduler (a gated
// job's queue is only resolved), noting each one's ClusterQueue and right-sizing in `accepted`.
// When the scheduler refuses one, those it took are cancelled and the refusal returned.
std::optional<SubmitOutcome> ServerState::schedule_submitted(std::vector<Job>& jobs, TimeNs now,
                                                             AcceptedJobs& accepted) {
  std::vector<JobId> done;
  std::map<JobId, JobId> array_ids;  // expand_arrays' placeholder -> the first task's id
  for (auto& job : jobs) {
    job.id = next_id_++;
    job.submit_ns = now;
    resolve_deadline(job);  // completeWithin: from now
    if (job.name.empty()) job.name = "job-" + std::to_string(job.id);
    if (job.exec().array_task >= 0)
      job.exec_mut().array_job = array_ids.try_emplace(job.exec().array_job, job.id).first->second;
    // A held, dependent or throttled job waits outside the scheduler (state_gates.cc): only
    // its queue is checked now.
    accepted.right_sizes.push_back(plan_right_size(job));
    auto res =
        gated_at_submit(job)
            ? sched_->resolve(job)
            : sched_->submit(right_sized_job(job, accepted.right_sizes.back().get(), *config_));
    accepted.queues.push_back(res.queue);
    if (res.status != SubmitStatus::kAccepted) {
      for (JobId id : done) sched_->cancel(id, now);
      return job_refused(job, res, jobs.size());
    }
    done.push_back(job.id);
  }
  return std::nullopt;
}

// Keeps the scheduled jobs of a submission as records, each with its submit event (from the
// prepared encoding when `prepared_ok`); returns their ids.
std::vector<JobId> ServerState::record_submitted(std::vector<Job>& jobs,
                                                 const AcceptedJobs& accepted, TimeNs now,
                                                 const PreparedSubmission* prepared,
                                                 bool prepared_ok) {
  std::vector<JobId> ids;
  size_t i = 0;
  for (auto& job : jobs) {
    JobRecord r;
    r.cluster_queue = config_->cluster_queues[static_cast<size_t>(accepted.queues[i])].name;
    r.queued_ns = now;
    r.pending_since_cycle = cycles_;
    r.job = std::move(job);
    r.right_size = accepted.right_sizes[i];
    metrics_.submitted[r.cluster_queue] += 1;
    if (prepared_ok) {
      r.job_json = job_json_with(r.job, prepared->job_bodies[i]);
      write_.events.push_back(submit_event_with(r.job, now, prepared->event_bodies[i]));
    } else {
      write_.events.push_back(submit_event_with(r.job, now, submit_event_body(r.job, *config_)));
    }
    if (prepared && prepared->kube_meta.size() == jobs.size()) r.kube_meta = prepared->kube_meta[i];
    ++i;
    trace_submit(r, now);
    ids.push_back(r.job.id);
    keep_submitted(std::move(r), now);
  }
  return ids;
}

// A new job's record joins the state: its array, its gate, the history, the pending count.
void ServerState::keep_submitted(JobRecord r, TimeNs now) {
  const JobId id = r.job.id;
  if (r.job.exec().array_task >= 0) arrays_[r.job.exec().array_job].push_back(id);
  if (gated_at_submit(r.job)) {
    r.gated = true;
    r.held = r.job.exec().hold;
    r.deps_met = r.job.exec().dependency.empty();
    gated_.insert(id);
    gates_dirty_ = true;
  }
  history_submit(r);
  right_size_event(r, now);
  backpressure_.count_pending(r.job.namespace_, +1);
  add_record(std::move(r));
  touch(records_.at(id));
}

SubmitOutcome ServerState::submit(std::vector<Job> jobs, TimeNs now,
                                  const PreparedSubmission* prepared) {
  if (jobs.empty()) return SubmitOutcome{400, "no job documents in the body", {}, {}, 0};
  if (auto why = image_refusal(jobs); !why.empty()) return nothing_submitted(why);
  const bool arrays =
      std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return !j.exec().array.empty(); });
  if (arrays) {
    std::string why;
    jobs = expand_arrays(std::move(jobs), &why);
    if (!why.empty()) return nothing_submitted(why);
  }
  if (auto why = unknown_dependency(jobs); !why.empty()) return nothing_submitted(why);
  const auto per_namespace = jobs_per_namespace(jobs);
  if (auto refused = backpressure(per_namespace, now)) return std::move(*refused);
  AcceptedJobs accepted;
  if (auto refused = schedule_submitted(jobs, now, accepted)) return std::move(*refused);
  const bool prepared_ok = !arrays && prepared && prepared->config == config_ &&
                           prepared->job_bodies.size() == jobs.size() &&
                           prepared->event_bodies.size() == jobs.size();
  SubmitOutcome out;
  out.ids = record_submitted(jobs, accepted, now, prepared, prepared_ok);
  backpressure_.charge(per_namespace, now);
  if (gates_dirty_) open_gates(now);
  write_.meta.push_back({"next_id", std::to_string(next_id_)});
  dirty_ = true;
  out.ticket = flush();
  return out;
}

}  // namespace sluice::server
