#include "server/tracing.h"

#include <cstdio>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/model/splitmix.h"

namespace sluice::server {

namespace {

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// An id of all zeros is invalid in W3C trace context and OTLP.
uint64_t nonzero(uint64_t v) {
  return v ? v : 1;
}

}  // namespace

// Per job a base from the seed and the job id; the trace id and each span id from the base.
std::string JobTracer::new_span_id(Open& o, JobId) {
  return hex64(nonzero(splitmix64(o.base + 0x632be59bd9b4e019ULL * o.next_span++)));
}

Span JobTracer::child(Open& o, JobId id, const std::string& parent, const std::string& name,
                      TimeNs now) {
  Span s;
  s.trace_id = o.trace_id;
  s.span_id = new_span_id(o, id);
  s.parent_span_id = parent;
  s.name = name;
  s.start_ns = s.end_ns = now;
  return s;
}

void JobTracer::submit(JobId id, const std::string& name, const std::string& namespace_,
                       const std::string& cluster_queue, const std::string& priority_class,
                       TimeNs now) {
  Open o;
  o.base = splitmix64(splitmix64(seed_) + id);
  o.trace_id = hex64(nonzero(splitmix64(o.base ^ 0x5bd1e995ULL))) + hex64(splitmix64(o.base + 1));
  o.root.trace_id = o.trace_id;
  o.root.span_id = new_span_id(o, id);
  o.root.name = "job";
  o.root.start_ns = now;
  o.root.attributes = {{"sluice.job.id", static_cast<int64_t>(id)},
                       {"sluice.job.name", name},
                       {"sluice.namespace", namespace_},
                       {"sluice.cluster_queue", cluster_queue},
                       {"sluice.priority_class", priority_class}};
  Span sub = child(o, id, o.root.span_id, "submit", now);
  sub.attributes = {{"sluice.cluster_queue", cluster_queue}};
  finished_.push_back(std::move(sub));
  o.admission = child(o, id, o.root.span_id, "admission", now);
  jobs_[id] = std::move(o);
}

void JobTracer::admit(JobId id, const std::vector<std::string>& nodes, TimeNs now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Open& o = it->second;
  if (o.admission) {
    o.admission->end_ns = now;
    o.admission->attributes.push_back(
        {"sluice.wait_s", static_cast<double>(now - o.admission->start_ns) / 1e9});
    finished_.push_back(std::move(*o.admission));
    o.admission.reset();
  }
  o.run = child(o, id, o.root.span_id, "run", now);
  std::string joined;
  for (const auto& n : nodes) joined += (joined.empty() ? "" : ",") + n;
  o.run->attributes = {{"sluice.nodes", joined},
                       {"sluice.pods", static_cast<int64_t>(nodes.size())}};
  o.pod_starts.clear();
  for (size_t i = 0; i < nodes.size(); ++i) {
    Span p = child(o, id, o.run->span_id, "pod start", now);
    p.attributes = {{"sluice.pod", static_cast<int64_t>(i)}, {"sluice.node", nodes[i]}};
    o.pod_starts[static_cast<int32_t>(i)] = std::move(p);
  }
}

void JobTracer::pod_started(JobId id, int32_t pod, const std::string& node, TimeNs now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  auto p = it->second.pod_starts.find(pod);
  if (p == it->second.pod_starts.end()) return;  // reported twice, or of an earlier run
  p->second.end_ns = now;
  if (!node.empty()) p->second.attributes.back() = {"sluice.node", node};
  finished_.push_back(std::move(p->second));
  it->second.pod_starts.erase(p);
}

void JobTracer::close_run(Open& o, TimeNs now, bool error, const std::string& why) {
  for (auto& [pod, p] : o.pod_starts) {  // never reported running
    p.end_ns = now;
    p.error = true;
    p.status_message = "the pod did not start: " + why;
    finished_.push_back(std::move(p));
  }
  o.pod_starts.clear();
  if (!o.run) return;
  o.run->end_ns = now;
  o.run->error = error;
  if (error) o.run->status_message = why;
  finished_.push_back(std::move(*o.run));
  o.run.reset();
}

void JobTracer::preempt(JobId id, const std::string& reason, TimeNs now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Open& o = it->second;
  if (o.run) {
    Span p = child(o, id, o.run->span_id, "preempt", now);
    p.attributes = {{"sluice.reason", reason}};
    finished_.push_back(std::move(p));
  }
  close_run(o, now, true, "preempted: " + reason);
  o.admission = child(o, id, o.root.span_id, "admission", now);  // requeued: waits again
  o.admission->attributes = {{"sluice.requeued", true}};
}

void JobTracer::end(JobId id, const std::string& state, TimeNs now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  Open& o = it->second;
  const bool failed = state != "succeeded";
  close_run(o, now, failed, state);
  if (o.admission) {  // ended while waiting (cancelled, rejected)
    o.admission->end_ns = now;
    finished_.push_back(std::move(*o.admission));
  }
  Span f = child(o, id, o.root.span_id, "finish", now);
  f.attributes = {{"sluice.state", state}};
  finished_.push_back(std::move(f));
  o.root.end_ns = now;
  o.root.attributes.push_back({"sluice.state", state});
  o.root.error = state == "failed";
  if (o.root.error) o.root.status_message = "the job failed";
  finished_.push_back(std::move(o.root));
  jobs_.erase(it);
}

std::optional<std::string> JobTracer::traceparent(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.run) return std::nullopt;
  return "00-" + it->second.trace_id + "-" + it->second.run->span_id + "-01";
}

std::vector<Span> JobTracer::take_finished() {
  std::vector<Span> out;
  out.swap(finished_);
  return out;
}

namespace {

nlohmann::json attr_json(const SpanAttr& a) {
  nlohmann::json v;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          v = {{"stringValue", x}};
        else if constexpr (std::is_same_v<T, int64_t>)
          v = {{"intValue", std::to_string(x)}};
        else if constexpr (std::is_same_v<T, double>)
          v = {{"doubleValue", x}};
        else
          v = {{"boolValue", x}};
      },
      a.second);
  return {{"key", a.first}, {"value", v}};
}

nlohmann::json span_json(const Span& s) {
  nlohmann::json attrs = nlohmann::json::array();
  for (const auto& a : s.attributes) attrs.push_back(attr_json(a));
  nlohmann::json j = {{"traceId", s.trace_id},
                      {"spanId", s.span_id},
                      {"name", s.name},
                      {"kind", 1},  // SPAN_KIND_INTERNAL
                      {"startTimeUnixNano", std::to_string(s.start_ns)},
                      {"endTimeUnixNano", std::to_string(s.end_ns)},
                      {"attributes", attrs}};
  if (!s.parent_span_id.empty()) j["parentSpanId"] = s.parent_span_id;
  // STATUS_CODE_OK = 1, STATUS_CODE_ERROR = 2.
  j["status"] = s.error ? nlohmann::json{{"code", 2}, {"message", s.status_message}}
                        : nlohmann::json{{"code", 1}};
  return j;
}

}  // namespace

std::string otlp_json(const std::vector<Span>& spans, const std::string& service_name,
                      const std::string& service_version) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : spans) list.push_back(span_json(s));
  nlohmann::json resource = {{"attributes",
                              {attr_json({"service.name", service_name}),
                               attr_json({"service.version", service_version})}}};
  nlohmann::json req = {
      {"resourceSpans",
       {{{"resource", resource},
         {"scopeSpans",
          {{{"scope", {{"name", "sluice"}, {"version", service_version}}}, {"spans", list}}}}}}}};
  return req.dump();
}

}  // namespace sluice::server
