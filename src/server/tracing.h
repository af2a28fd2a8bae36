#pragma once
// OpenTelemetry traces of jobs: one trace per job, its spans built from the job's lifecycle as
// the control plane sees it. No I/O and no clock (every call takes `now`): otlp_export.h sends
// the finished spans. The tree (parent <- child):
//
//   job (submit .. end)                       sluice.job.id, name, namespace, cluster_queue
//   +- submit        (instant, at submission)
//   +- admission     (submit or requeue .. admission; one per attempt)   sluice.wait_s
//   +- run           (admission .. end or preemption; one per attempt)   sluice.nodes
//   |  +- pod start  (admission .. the agent reports the process running)   node, pod index
//   |  +- preempt    (instant)                                              reason
//   +- finish        (instant, at the end)                                  sluice.state
//
// A pod's TRACEPARENT names its run span, so a training script's own spans join the job's trace.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/model/job.h"

namespace sluice::server {

using SpanAttr = std::pair<std::string, std::variant<std::string, int64_t, double, bool>>;

struct Span {
  std::string trace_id;        // 32 hex digits
  std::string span_id;         // 16 hex digits
  std::string parent_span_id;  // empty: the root
  std::string name;
  TimeNs start_ns = 0;
  TimeNs end_ns = 0;
  std::vector<SpanAttr> attributes;
  bool error = false;  // OTLP status ERROR (a failed job, a preempted run)
  std::string status_message;
};

class JobTracer {
 public:
  // Ids come from `seed` and the job id (splitmix64): give each server process its own seed.
  explicit JobTracer(uint64_t seed) : seed_(seed) {}

  void submit(JobId id, const std::string& name, const std::string& namespace_,
              const std::string& cluster_queue, const std::string& priority_class, TimeNs now);
  void admit(JobId id, const std::vector<std::string>& nodes, TimeNs now);
  void pod_started(JobId id, int32_t pod, const std::string& node, TimeNs now);
  void preempt(JobId id, const std::string& reason, TimeNs now);
  void end(JobId id, const std::string& state, TimeNs now);

  // W3C trace context of a job's current run ("00-TRACE-SPAN-01"); nullopt when not running.
  std::optional<std::string> traceparent(JobId id) const;
  // Spans that ended since the last call, in the order they ended.
  std::vector<Span> take_finished();
  size_t open_jobs() const { return jobs_.size(); }

 private:
  struct Open {
    std::string trace_id;
    Span root;
    std::optional<Span> admission;
    std::optional<Span> run;
    std::map<int32_t, Span> pod_starts;  // pods of the run not reported running yet
    uint64_t base = 0;                   // ids derive from it
    uint64_t next_span = 1;
  };
  std::string new_span_id(Open& o, JobId id);
  Span child(Open& o, JobId id, const std::string& parent, const std::string& name, TimeNs now);
  void close_run(Open& o, TimeNs now, bool error, const std::string& why);

  uint64_t seed_;
  std::map<JobId, Open> jobs_;  // jobs between submit and end
  std::vector<Span> finished_;
};

// OTLP/JSON (opentelemetry-proto, ExportTraceServiceRequest) of a batch of spans from one
// service: trace and span ids as hex strings and 64-bit times as decimal strings, as OTLP/JSON
// specifies.
std::string otlp_json(const std::vector<Span>& spans, const std::string& service_name,
                      const std::string& service_version);

}  // namespace sluice::server
