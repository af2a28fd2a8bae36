// The jobs' trace spans (tracing.h): the state machine reports each step of a job's lifecycle
// here; finished spans go straight to the span sink (an exporter's queue).
#include <random>

#include "server/state.h"

namespace sluice::server {

namespace {

void send_finished(JobTracer& t, const ServerOptions& o) {
  auto spans = t.take_finished();
  if (!spans.empty()) o.span_sink(std::move(spans));
}

}  // namespace

void ServerState::trace_submit(const JobRecord& r, TimeNs now) {
  if (!options_.span_sink) return;
  if (!tracer_) {
    // One seed per server process: trace ids of two servers (or two runs) never collide.
    std::random_device rd;
    tracer_ = std::make_unique<JobTracer>((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
  tracer_->submit(r.job.id, r.job.name, r.job.namespace_, r.cluster_queue,
                  r.job.exec().priority_class, now);
  send_finished(*tracer_, options_);
}

void ServerState::trace_admit(const JobRecord& r, TimeNs now) {
  if (!tracer_) return;
  std::vector<std::string> nodes;
  for (const auto& p : r.pods) nodes.push_back(p.node);
  tracer_->admit(r.job.id, nodes, now);
  send_finished(*tracer_, options_);
}

void ServerState::trace_pod_started(const JobRecord& r, int32_t pod, TimeNs now) {
  if (!tracer_) return;
  const std::string node = pod >= 0 && static_cast<size_t>(pod) < r.pods.size()
                               ? r.pods[static_cast<size_t>(pod)].node
                               : std::string();
  tracer_->pod_started(r.job.id, pod, node, now);
  send_finished(*tracer_, options_);
}

void ServerState::trace_preempt(const JobRecord& r, const std::string& reason, TimeNs now) {
  if (!tracer_) return;
  tracer_->preempt(r.job.id, reason, now);
  send_finished(*tracer_, options_);
}

void ServerState::trace_end(const JobRecord& r, TimeNs now) {
  if (!tracer_) return;
  tracer_->end(r.job.id, state_name(r.state), now);
  send_finished(*tracer_, options_);
}

}  // namespace sluice::server
