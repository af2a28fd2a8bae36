#include "sim/trace_events.h"

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/parse_num.h"

namespace sluice::sim {

namespace {

using nlohmann::json;

struct Building {
  TraceJob tj;
  size_t line_index = 0;      // position of the submit line (jobs keep submit order)
  TimeNs running_since = -1;  // -1: not running
  bool ended = false;
  bool bad = false;
};

std::optional<TimeNs> seconds_field(const json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || std::fabs(v) > kMaxTraceSeconds) return std::nullopt;
  return static_cast<TimeNs>(std::llround(v * 1e9));
}

template <class T>
bool int_field(const json& e, const char* key, T def, T lo, T hi, T* out) {
  const auto it = e.find(key);
  if (it == e.end()) {
    *out = def;
    return true;
  }
  if (!it->is_number_integer()) return false;
  const int64_t v = it->get<int64_t>();
  if (v < static_cast<int64_t>(lo) || v > static_cast<int64_t>(hi)) return false;
  *out = static_cast<T>(v);
  return true;
}

std::string str_field(const json& e, const char* key, const std::string& def) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : def;
}

// A submit line's job; `*bad` says what is wrong with it (the job is kept, marked bad, so that
// its later events are not reported as events of an unknown job).
Building read_submit(const json& e, JobId id, TimeNs t, size_t line_index, std::string* bad) {
  Building b;
  b.line_index = line_index;
  Job& j = b.tj.job;
  j.id = id;
  j.submit_ns = t;
  j.name = str_field(e, "name", "job-" + std::to_string(id));
  j.namespace_ = str_field(e, "namespace", "default");
  j.queue = str_field(e, "queue", "");
  j.exec_mut().priority_class = str_field(e, "priority_class", "");
  const auto pre = e.find("preemptible");
  j.preemptible = pre == e.end() || !pre->is_boolean() || pre->get<bool>();
  int32_t pods = 1, gpus = 0, gpu_milli = 1000;
  int64_t cpu = 0, mem = 0;
  if (j.queue.empty())
    *bad = "queue: missing";
  else if (!int_field<int32_t>(e, "pods", 1, 1, 100000, &pods))
    *bad = "pods: not 1..100000";
  else if (!int_field<int32_t>(e, "gpus", 0, 0, 64, &gpus))
    *bad = "gpus: not 0..64";
  else if (!int_field<int32_t>(e, "gpu_milli", 1000, 1, 1000, &gpu_milli))
    *bad = "gpu_milli: not 1..1000";
  else if (gpu_milli < 1000 && gpus != 1)
    *bad = "gpu_milli < 1000 needs gpus: 1";
  else if (!int_field<int64_t>(e, "cpu_milli", 0, 0, int64_t{1} << 40, &cpu))
    *bad = "cpu_milli: not a non-negative integer";
  else if (!int_field<int64_t>(e, "memory_mib", 0, 0, int64_t{1} << 40, &mem))
    *bad = "memory_mib: not a non-negative integer";
  else if (gpus == 0 && cpu == 0 && mem == 0)
    *bad = "the job requests nothing";
  // The server writes `walltime: null` for a job run without one: no estimate.
  if (e.contains("walltime") && !e["walltime"].is_null()) {
    const auto w = seconds_field(e, "walltime");
    if (!w || *w < 0)
      *bad = "walltime: not a non-negative number of seconds";
    else
      j.walltime_ns = *w;
  }
  b.bad = !bad->empty();
  PodSet ps;
  ps.count = pods;
  ps.gpus = gpus;
  ps.gpu_milli = gpu_milli;
  ps.requests[kGpu] = int64_t{gpus} * gpu_milli;
  ps.requests[kCpu] = cpu;
  ps.requests[kMemory] = mem;
  j.pod_sets = {ps};
  return b;
}

// A later event of a submitted job: "" when it applies, else what is wrong.
std::string apply_event(Building& b, const std::string& kind, TimeNs t) {
  const std::string job = "job " + std::to_string(b.tj.job.id);
  if (kind == "requeue") {  // a user requeued an ended job (sluice requeue): it runs again
    const bool ended = b.ended;
    b.ended = false;
    return ended ? "" : job + " is requeued but has not ended";
  }
  if (b.ended) return job + " already ended";
  if (kind == "start") {
    if (b.running_since >= 0) return job + " is already running";
    b.running_since = t;
  } else if (kind == "preempt" || kind == "end") {
    if (b.running_since >= 0) {
      b.tj.duration_ns += t - b.running_since;
      b.running_since = -1;
    } else if (kind == "preempt") {
      return job + " is not running";
    }
    if (kind == "end") b.ended = true;  // an end without a start: cancelled while pending
  } else {
    return "event: '" + kind + "' is not submit, start, preempt, end or requeue";
  }
  return {};
}

// A job is usable when it ended; one still open at the end of the file is reported at its
// submit line. Jobs keep submit order (the map is by id, so sort by line).
void finish_jobs(std::map<JobId, Building>& jobs, TraceOutput& out) {
  std::vector<Building*> order;
  for (auto& [id, b] : jobs) order.push_back(&b);
  std::sort(order.begin(), order.end(),
            [](const Building* x, const Building* y) { return x->line_index < y->line_index; });
  for (Building* b : order) {
    if (b->bad) continue;
    if (!b->ended) {
      out.errors.push_back(b->tj.where + ": job " + std::to_string(b->tj.job.id) +
                           " has no end event");
      continue;
    }
    if (b->tj.job.walltime_ns == 0) b->tj.job.walltime_ns = b->tj.duration_ns;
    out.jobs.push_back(std::move(b->tj));
  }
}

bool is_pool_event(const std::string& kind) {
  return kind == "scale-up" || kind == "scale-down" || kind == "provisioner" || kind == "reclaim";
}

}  // namespace

TraceOutput read_sluice_events(const std::string& name, const std::string& text) {
  TraceOutput out;
  std::map<JobId, Building> jobs;
  std::istringstream in(text);
  std::string line;
  int64_t line_no = 0;
  TimeNs last_time = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // The node pools' events (docs/autoscaling.md) are the cluster's, no job's: not rows.
    if (e.is_object() && is_pool_event(str_field(e, "event", ""))) continue;
    ++out.rows;
    const std::string where = name + ":" + std::to_string(line_no);
    auto fail = [&](const std::string& what) { out.errors.push_back(where + ": " + what); };
    if (e.is_discarded() || !e.is_object()) {
      fail("not a JSON object");
      continue;
    }
    const std::string kind = str_field(e, "event", "");
    const auto t = seconds_field(e, "time");
    JobId id = 0;
    if (!t || *t < 0) {
      fail("time: missing, not a number or negative");
      continue;
    }
    if (!int_field<JobId>(e, "id", 0, 1, JobId{1} << 53, &id) || id == 0) {
      fail("id: missing or not a positive integer");
      continue;
    }
    if (*t < last_time) {
      fail("time goes backwards (events must be in time order)");
      continue;
    }
    last_time = *t;
    if (kind == "submit") {
      if (jobs.count(id)) {
        fail("job " + std::to_string(id) + " submitted twice");
        continue;
      }
      std::string bad;
      Building b = read_submit(e, id, *t, static_cast<size_t>(line_no), &bad);
      if (!bad.empty()) fail(bad);
      b.tj.where = where;
      jobs.emplace(id, std::move(b));
      continue;
    }
    auto it = jobs.find(id);
    if (it == jobs.end()) {
      fail("job " + std::to_string(id) + " has no earlier submit event");
      continue;
    }
    if (auto why = apply_event(it->second, kind, *t); !why.empty()) fail(why);
  }
  finish_jobs(jobs, out);
  return out;
}

}  // namespace sluice::sim
