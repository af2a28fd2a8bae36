// core/v1 Events through the Kubernetes API (docs/kubernetes.md "Events"), which `kubectl
// describe job/x` and `kubectl describe workload/x` list under the object (GET
// /api/v1/namespaces/NS/events?fieldSelector=involvedObject.name=x,...) and `kubectl get
// events` lists. sluice keeps no event objects: a job's events are derived, when asked for,
// from what the server keeps of it: its record (submitted, why it waits now, how it ended,
// why it was requeued last) and its history row (when each run started and ended). They say
// why a job waits in sluice's words, that it was admitted, preempted or requeued, finished.
#include <cctype>
#include <cstdio>

#include "server/http/kube.h"
#include "server/http/reply.h"
#include "server/server.h"

namespace sluice::server {

using nlohmann::json;

namespace kube {

namespace {

// Kubernetes cuts an event's message at 1 KiB.
constexpr size_t kMaxMessage = 1024;

struct Target {
  std::string api_version, kind, name, uid;
};

std::string event_suffix(JobId id, size_t seq) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%013llx%03zx", static_cast<unsigned long long>(id), seq);
  return buf;
}

class Builder {
 public:
  explicit Builder(const JobRecord& r) : r_(r) {}
  void add(const Target& t, TimeNs at, const char* type, const std::string& reason,
           std::string message) {
    if (message.size() > kMaxMessage) message = message.substr(0, kMaxMessage - 3) + "...";
    const size_t seq = out.size();
    const json ts = time_field(at);
    json o = {{"apiVersion", "v1"},
              {"kind", "Event"},
              {"metadata",
               {{"name", t.name + "." + event_suffix(r_.job.id, seq)},
                {"namespace", r_.job.namespace_},
                {"uid", "sluice-event-" + std::to_string(r_.job.id) + "-" + std::to_string(seq)},
                {"resourceVersion", std::to_string(r_.rv)},
                {"creationTimestamp", ts}}},
              {"involvedObject",
               {{"apiVersion", t.api_version},
                {"kind", t.kind},
                {"name", t.name},
                {"namespace", r_.job.namespace_},
                {"uid", t.uid}}},
              {"reason", reason},
              {"message", std::move(message)},
              {"type", type},
              {"source", {{"component", "sluice"}}},
              {"firstTimestamp", ts},
              {"lastTimestamp", ts},
              {"count", 1},
              {"eventTime", nullptr},
              {"reportingComponent", "sluice"},
              {"reportingInstance", ""}};
    out.push_back({std::move(o), at});
  }
  std::vector<Event> out;

 private:
  const JobRecord& r_;
};

struct Run {
  TimeNs start = 0, end = -1;  // end -1: running
};

// The job's runs, oldest first: its history row's, else the record's last run.
std::vector<Run> runs_of(const JobRecord& r, const HistoryRow* h) {
  std::vector<Run> out;
  if (h) {
    for (const auto& [s, e] : h->runs) out.push_back({s, e});
    if (h->running_since >= 0) out.push_back({h->running_since, -1});
  } else if (r.admit_ns > 0) {
    out.push_back(
        {r.admit_ns, r.state == JobState::kRunning ? -1 : std::max(r.end_ns, r.queued_ns)});
  }
  return out;
}

}  // namespace

std::vector<Event> job_events(const JobRecord& r, const HistoryRow* h,
                              const std::string& why_pending) {
  const std::string id = std::to_string(r.job.id);
  const Target job{"batch/v1", "Job", r.job.name, "sluice-job-" + id};
  const Target wl{std::string(kKueueGroup) + "/" + kKueueVersion, "Workload", workload_name(r),
                  "sluice-workload-" + id};
  const std::string& cq = r.cluster_queue;
  Builder b(r);
  b.add(job, r.job.submit_ns, "Normal", "CreatedWorkload",
        "Created Workload: " + r.job.namespace_ + "/" + wl.name);
  const std::vector<Run> runs = runs_of(r, h);
  const bool ended = is_terminal(r.state);
  // The last run of an ended job ended with it; every other run that ended was stopped and
  // the job sent back to its queue (a preemption, a user's requeue, an eviction, a lost node).
  const bool last_is_final =
      ended && !runs.empty() && runs.back().end >= 0 && runs.back().end + kNsPerSec >= r.end_ns;
  const size_t first = runs.size() > kMaxEventRuns ? runs.size() - kMaxEventRuns : 0;
  for (size_t k = first; k < runs.size(); ++k) {
    const Run& run = runs[k];
    const TimeNs queued = k == 0 ? r.job.submit_ns : runs[k - 1].end;
    b.add(wl, run.start, "Normal", "QuotaReserved",
          "Quota reserved in ClusterQueue " + cq + ", wait time since queued was " +
              human_duration(run.start - queued));
    b.add(wl, run.start, "Normal", "Admitted",
          "Admitted by ClusterQueue " + cq + ", wait time since reservation was 0s");
    b.add(job, run.start, "Normal", "Started", "Admitted by clusterQueue " + cq);
    if (run.end < 0 || (k + 1 == runs.size() && last_is_final)) continue;
    // Why it was stopped: the record keeps the last requeue's reason while the job waits
    // (a new run clears it).
    const bool last_stop = k + 1 == runs.size() && r.state == JobState::kPending;
    const std::string why = last_stop && !r.reason.empty()
                                ? r.reason
                                : "its run was stopped (preempted, requeued, evicted, or its "
                                  "node was lost)";
    const bool preempted = why.starts_with("preempted");  // the scheduler's own words
    b.add(wl, run.end, "Normal", preempted ? "Preempted" : "Evicted",
          why + "; requeued: the workload waits in ClusterQueue " + cq + " again");
    b.add(job, run.end, "Normal", "Stopped", why + "; requeued");
  }
  if (r.state == JobState::kPending) {
    const std::string why = why_pending.empty() ? "waiting for the next cycle" : why_pending;
    const TimeNs at = std::max(r.queued_ns, r.job.submit_ns);
    b.add(wl, at, "Normal", "Pending", why);
    b.add(job, at, "Normal", "Pending", why);
  }
  if (r.state == JobState::kSucceeded) {
    b.add(wl, r.end_ns, "Normal", "Finished", "Job finished successfully");
    b.add(job, r.end_ns, "Normal", "Completed", "Job completed");
  } else if (r.state == JobState::kFailed || r.state == JobState::kRejected) {
    const bool rejected = r.state == JobState::kRejected;
    b.add(wl, r.end_ns, "Warning", "Finished", (rejected ? "Rejected: " : "Failed: ") + r.reason);
    b.add(job, r.end_ns, "Warning", rejected ? "Rejected" : "Failed", r.reason);
  }
  return std::move(b.out);
}

const std::vector<Column>& event_columns() {
  static const std::vector<Column> c = {
      {"Last Seen", "string", "",
       "The time at which the most recent occurrence of this event was recorded."},
      {"Type", "string", "", "Type of this event (Normal, Warning)."},
      {"Reason", "string", "", "This should be a short, machine understandable string."},
      {"Object", "string", "", "The object that this event is about."},
      {"Subobject", "string", "", "The subobject that this event is about.", 1},
      {"Source", "string", "", "The component reporting this event.", 1},
      {"Message", "string", "", "A human-readable description of the status of this operation."},
      {"First Seen", "string", "", "The time at which the event was first recorded.", 1},
      {"Count", "string", "", "The number of times this event has occurred.", 1},
      {"Name", "string", "name", "Name must be unique within a namespace.", 1}};
  return c;
}

json event_row(const Event& e, TimeNs now) {
  const json& o = e.object;
  const json& inv = o["involvedObject"];
  std::string kind = inv["kind"];
  for (auto& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::string age = human_duration(now - e.at);
  return json::array({age, o["type"], o["reason"], kind + "/" + inv["name"].get<std::string>(), "",
                      "sluice", o["message"], age, "1", o["metadata"]["name"]});
}

std::optional<std::pair<JobId, size_t>> split_event_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot == 0 || name.size() - dot - 1 != 16) return std::nullopt;
  uint64_t v[2] = {0, 0};
  for (size_t i = dot + 1; i < name.size(); ++i) {
    const char ch = name[i];
    const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    uint64_t& part = v[i - dot - 1 < 13 ? 0 : 1];
    part = part * 16 + static_cast<uint64_t>(d);
  }
  return std::pair{static_cast<JobId>(v[0]), static_cast<size_t>(v[1])};
}

}  // namespace kube

void Server::kube_events(const kube::Call& c, net::Response& res) {
  const auto now = now_ns();
  json out;
  {
    std::lock_guard lk(state_->mu());
    const auto events_of = [&](const JobRecord& r) {
      return kube::job_events(r, state_->history().find(r.job.id), kube_why_pending(r));
    };
    if (!c.path.name.empty()) {
      const auto split = kube::split_event_name(c.path.name);
      const JobRecord* r = split ? state_->find(split->first) : nullptr;
      if (r && kube::listed(*r) && r->job.namespace_ == c.path.ns) {
        auto all = events_of(*r);
        if (split->second < all.size() &&
            all[split->second].object["metadata"]["name"] == c.path.name) {
          json cells = kube::event_row(all[split->second], now);
          out = kube::single(c, kube::event_columns(), std::move(all[split->second].object),
                             std::move(cells));
        }
      }
      if (out.is_null()) return reply(res, 404, kube::not_found(c, c.path.name));
    } else {
      kube::Listing list(c, kube::event_columns());
      const auto add_all = [&](const JobRecord& r) {
        for (auto& e : events_of(r))
          list.add(std::move(e.object), [&] { return kube::event_row(e, now); });
      };
      // kubectl describe asks for one object's events: found by its name, not by a scan.
      std::string name, kind, ns = c.path.ns;
      for (const auto& [k, v] : c.fields.equal) {
        if (k == "involvedObject.name") name = v;
        if (k == "involvedObject.kind") kind = v;
        if (k == "involvedObject.namespace" && ns.empty()) ns = v;
      }
      std::string next;
      if (!name.empty() && !ns.empty()) {
        const JobRecord* as_job =
            kind.empty() || kind == "Job" ? kube_job_named(ns, name) : nullptr;
        if (as_job) add_all(*as_job);
        if (kind.empty() || kind == "Workload") {
          const auto id = kube::workload_job_id(name);
          const JobRecord* r = id ? state_->find(*id) : nullptr;
          if (r && r != as_job && kube::listed(*r) && r->job.namespace_ == ns &&
              kube::workload_name(*r) == name)
            add_all(*r);
        }
      } else {
        next = kube_scan(
            c, [&] { return list.full(); }, add_all);
      }
      out = list.done("EventList", next, state_->journal().current());
    }
  }
  reply(res, 200, out);
}

}  // namespace sluice::server
