// ServerState, its persistence: job records encoded for the store, the write queued for the next
// flush, and the finished jobs kept beyond the limit trimmed from memory and store.
#include <algorithm>

#include "server/http/kube_meta.h"
#include "server/job_codec.h"
#include "server/json_text.h"
#include "server/state.h"

namespace sluice::server {

using nlohmann::json;

using json_text::str;

// ,"key":
void put_key(std::string& out, std::string_view key) {
  json_text::key(out, key);
}

namespace {

// A record's "pods": [{"node", "gpus", "gpu_milli", "started", ..., "run", "completion"}, ...]
void encode_pod_runs(std::string& out, const std::vector<PodRun>& pods) {
  out += '[';
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodRun& p = pods[i];
    out += i ? ",{\"node\":" : "{\"node\":";
    str(out, p.node);
    put_key(out, "gpus");
    out += '[';
    for (size_t g = 0; g < p.gpus.size(); ++g) {
      if (g) out += ',';
      out += std::to_string(p.gpus[g]);
    }
    out += ']';
    put_key(out, "gpu_milli");
    out += std::to_string(p.gpu_milli);
    put_key(out, "started");
    out += p.started ? "true" : "false";
    put_key(out, "started_ns");
    out += std::to_string(p.started_ns);
    put_key(out, "exited");
    out += p.exited ? "true" : "false";
    if (p.exited) {
      put_key(out, "exit");
      out += json(p.exit).dump(-1, ' ', false, json::error_handler_t::replace);
    }
    if (p.run) {
      put_key(out, "run");
      out += std::to_string(p.run);
    }
    if (p.completion >= 0) {
      put_key(out, "completion");
      out += std::to_string(p.completion);
      put_key(out, "rerun");
      out += p.rerun ? "true" : "false";
    }
    out += '}';
  }
  out += ']';
}

// One pod's run of a stored record; what is wrong with it, if anything.
std::optional<std::string> decode_pod(const json& p, PodRun* pr) {
  pr->node = p.value("node", "");
  pr->gpus = p.value("gpus", std::vector<int32_t>{});
  pr->gpu_milli = p.value("gpu_milli", 1000);
  pr->started = p.value("started", false);
  pr->started_ns = p.value("started_ns", int64_t{0});
  if (auto bad = time_out_of_bounds({{"pods[].started_ns", pr->started_ns}})) return bad;
  pr->exited = p.value("exited", false);
  if (p.contains("exit")) pr->exit = p["exit"].get<proto::PodExit>();
  pr->completion = p.value("completion", -1);
  pr->rerun = p.value("rerun", false);
  pr->run = p.value("run", uint64_t{0});
  return std::nullopt;
}

// A record's measured GPU use and right-sizing decision (absent from older records).
void decode_gpu_use(const json& j, JobRecord& r) {
  if (const auto u = j.find("gpu_use"); u != j.end() && u->is_object()) {
    r.gpu_use.samples = u->value("samples", int64_t{0});
    r.gpu_use.peak_mib = u->value("peak_mib", int64_t{0});
    r.gpu_use.mib_sum = u->value("mib_sum", int64_t{0});
    r.gpu_use.util_sum = u->value("util_sum", int64_t{0});
    if (r.gpu_use.samples < 0) r.gpu_use = {};
  }
  if (const auto s = j.find("right_size"); s != j.end() && s->is_object()) {
    auto rs = std::make_shared<RightSizing>();
    rs->shape = s->value("shape", "");
    rs->mig = s->value("mig", false);
    rs->memory_mib = s->value("memory_mib", int64_t{0});
    rs->runs = s->value("runs", int32_t{0});
    rs->peak_mib = s->value("peak_mib", int64_t{0});
    rs->retried = s->value("retried", false);
    if (!rs->shape.empty()) r.right_size = std::move(rs);
  }
}

}  // namespace

// Written by hand: a record is rewritten at submission, start and end of every job, and
// building it as an nlohmann object was a seventh of the server's CPU at a thousand jobs a
// second. decode_record() reads it back with nlohmann.
std::string ServerState::encode_record(const JobRecord& r) const {
  if (r.job_json.empty()) r.job_json = proto::dump_json(encode_job(r.job, *config_));
  std::string out;
  out.reserve(r.job_json.size() + 256 + 128 * r.pods.size());
  out += "{\"job\":";
  out += r.job_json;
  put_key(out, "cluster_queue");
  str(out, r.cluster_queue);
  put_key(out, "state");
  str(out, state_name(r.state));
  put_key(out, "queued_ns");
  out += std::to_string(r.queued_ns);
  if (r.aged_from_ns > 0) {
    put_key(out, "aged_from_ns");
    out += std::to_string(r.aged_from_ns);
  }
  put_key(out, "admit_ns");
  out += std::to_string(r.admit_ns);
  put_key(out, "end_ns");
  out += std::to_string(r.end_ns);
  put_key(out, "admission");
  out += r.admission ? encode_admission(*r.admission, *config_) : "null";
  put_key(out, "pods");
  encode_pod_runs(out, r.pods);
  if (!r.completed.empty()) {
    put_key(out, "completed");
    out += '[';
    for (size_t i = 0; i < r.completed.size(); ++i)
      out += (i ? "," : "") + std::to_string(r.completed[i]);
    out += ']';
  }
  if (r.master_port) {
    put_key(out, "master_port");
    out += std::to_string(r.master_port);
  }
  put_key(out, "preemptions");
  out += std::to_string(r.preemptions);
  put_key(out, "attempts");
  out += std::to_string(r.attempts);
  if (r.launches) {
    put_key(out, "launches");
    out += std::to_string(r.launches);
  }
  put_key(out, "reason");
  str(out, r.reason);
  put_key(out, "exit_code");
  out += r.exit_code ? std::to_string(*r.exit_code) : "null";
  if (r.gpu_use.samples > 0) {
    out += ",\"gpu_use\":{\"samples\":" + std::to_string(r.gpu_use.samples) +
           ",\"peak_mib\":" + std::to_string(r.gpu_use.peak_mib) +
           ",\"mib_sum\":" + std::to_string(r.gpu_use.mib_sum) +
           ",\"util_sum\":" + std::to_string(r.gpu_use.util_sum) + "}";
  }
  if (r.right_size) {
    const RightSizing& rs = *r.right_size;
    out += ",\"right_size\":{\"shape\":";
    str(out, rs.shape);
    out += ",\"mig\":" + std::string(rs.mig ? "true" : "false") +
           ",\"memory_mib\":" + std::to_string(rs.memory_mib) +
           ",\"runs\":" + std::to_string(rs.runs) + ",\"peak_mib\":" + std::to_string(rs.peak_mib) +
           ",\"retried\":" + (rs.retried ? "true" : "false") + "}";
  }
  if (r.held) out += ",\"held\":true";
  if (!r.deps_met) out += ",\"deps_met\":false";
  if (r.gated) out += ",\"gated\":true";
  if (!r.kube_meta.empty()) {
    put_key(out, "kube_meta");
    out += r.kube_meta;  // compact JSON, checked when it was kept (http/kube_meta.h)
  }
  out += '}';
  return out;
}

std::optional<JobRecord> ServerState::decode_record(const json& j, std::string* why) const {
  try {
    JobRecord r;
    auto job = decode_job(j.at("job"), *config_);
    if (!job) {
      *why = job.error();
      return std::nullopt;
    }
    r.job = std::move(*job);
    r.cluster_queue = j.value("cluster_queue", "");
    auto st = parse_state(j.value("state", "pending"));
    r.state = st ? *st : JobState::kPending;
    r.queued_ns = j.value("queued_ns", int64_t{0});
    r.aged_from_ns = j.value("aged_from_ns", int64_t{0});
    r.admit_ns = j.value("admit_ns", int64_t{0});
    r.end_ns = j.value("end_ns", int64_t{0});
    if (auto bad = time_out_of_bounds({{"queued_ns", r.queued_ns},
                                       {"aged_from_ns", r.aged_from_ns},
                                       {"admit_ns", r.admit_ns},
                                       {"end_ns", r.end_ns}})) {
      *why = "job " + std::to_string(r.job.id) + ": " + *bad;
      return std::nullopt;
    }
    if (j.contains("admission") && !j["admission"].is_null()) {
      auto a = decode_admission(j["admission"], *config_);
      if (!a) {
        *why = "job " + std::to_string(r.job.id) + ": " + a.error();
        return std::nullopt;
      }
      r.admission = std::move(*a);
      r.admission->job = r.job.id;
    }
    for (const auto& p : j.value("pods", json::array())) {
      PodRun pr;
      if (auto bad = decode_pod(p, &pr)) {
        *why = "job " + std::to_string(r.job.id) + ": " + *bad;
        return std::nullopt;
      }
      r.pods.push_back(std::move(pr));
    }
    r.completed = j.value("completed", std::vector<int32_t>{});
    r.master_port = j.value("master_port", 0);
    r.preemptions = j.value("preemptions", 0);
    r.attempts = j.value("attempts", 0);
    r.launches = j.value("launches", uint64_t{0});
    r.reason = j.value("reason", "");
    if (j.contains("exit_code") && !j["exit_code"].is_null())
      r.exit_code = j["exit_code"].get<int32_t>();
    r.held = j.value("held", false);
    r.deps_met = j.value("deps_met", true);
    r.gated = j.value("gated", false);
    decode_gpu_use(j, r);
    if (const auto m = j.find("kube_meta"); m != j.end() && !m->is_null()) {
      auto kept = kube::check_kept_meta(m->dump(-1, ' ', false, json::error_handler_t::replace));
      if (!kept) {
        *why = "job " + std::to_string(r.job.id) +
               ": kube_meta: not the labels and annotations the Kubernetes API keeps";
        return std::nullopt;
      }
      r.kube_meta = std::move(*kept);
    }
    return r;
  } catch (const json::exception& e) {
    *why = std::string("malformed record: ") + e.what();
    return std::nullopt;
  }
}

int ServerState::set_kube_meta(JobId id, std::string meta, uint64_t* ticket) {
  auto it = records_.find(id);
  if (it == records_.end()) return 404;
  if (it->second.kube_meta == meta) return 200;
  it->second.kube_meta = std::move(meta);
  touch(it->second);
  *ticket = flush();
  return 200;
}

void ServerState::touch(const JobRecord& r) {
  touched_.insert(r.job.id);
}

void ServerState::event(json e) {
  write_.events.push_back(proto::dump_json(e));
  // The history follows the log (history.h); the submit event is written as text, so
  // history_submit() takes the record instead.
  const std::string kind = e.value("event", "");
  const JobId id = e.value("id", JobId{0});
  const auto t = static_cast<TimeNs>(e.value("time", 0.0) * 1e9);
  if (kind == "start") {
    history_.start(id, t);
  } else if (kind == "preempt") {
    history_.preempt(id, t);
  } else if (kind == "requeue") {
    history_.reopen(id, t);
  } else if (kind == "end") {
    std::optional<int32_t> code;
    if (e.contains("exit_code")) code = e["exit_code"].get<int32_t>();
    history_.end(id, t, e.value("state", ""), code, e.value("reason", ""));
  }
}

void ServerState::history_submit(const JobRecord& r) {
  HistoryRow h;
  h.id = r.job.id;
  h.name = r.job.name;
  h.user = r.job.exec().user;
  h.namespace_ = r.job.namespace_;
  h.queue = r.job.queue;
  h.submit_ns = r.job.submit_ns;
  h.gpu_milli = job_gpu_milli(r.job, *config_);
  h.array_job = r.job.exec().array_task >= 0 ? r.job.exec().array_job : 0;
  h.array_task = r.job.exec().array_task;
  history_.submit(std::move(h));
}

// A recovered job the replayed history lacks (the events table's retention dropped its submit
// event): its row from the record, with its last run's start and its end.
void ServerState::history_recovered(const JobRecord& r) {
  if (history_.find(r.job.id)) return;
  history_submit(r);
  if (r.admit_ns > 0 && r.state != JobState::kPending) history_.start(r.job.id, r.admit_ns);
  if (r.state != JobState::kPending && r.state != JobState::kRunning)
    history_.end(r.job.id, r.end_ns, state_name(r.state), r.exit_code, r.reason);
}

void ServerState::retire(const JobRecord& r) {
  if (options_.keep_finished_jobs > 0) finished_.insert({r.end_ns, r.job.id});
}

// Drops the finished jobs that ended first beyond keep_finished_jobs, from memory and (in this
// flush's write) from the store. Records changed since the last flush are kept for now: the
// operation that changed them may still hold them.
void ServerState::trim_finished() {
  const size_t before = write_.deleted.size();
  for (auto it = finished_.begin();
       it != finished_.end() &&
       static_cast<int64_t>(finished_.size()) > options_.keep_finished_jobs;) {
    const JobId id = it->second;
    if (touched_.count(id)) {
      ++it;
      continue;
    }
    it = finished_.erase(it);
    erase_record(id);
    pending_reasons_.forget(id);
    write_.deleted.push_back(id);
  }
  // Ids are never reused, also when the job with the highest one is dropped (recover()).
  if (write_.deleted.size() != before)
    write_.meta.push_back({"next_job_id", std::to_string(next_id_)});
}

int ServerState::forget_finished(JobId id, std::string* error, uint64_t* ticket) {
  const JobRecord* r = find(id);
  if (!r) {
    *error = "no job " + std::to_string(id);
    return 404;
  }
  if (!is_terminal(r->state)) {
    *error = "job " + std::to_string(id) + " is " + state_name(r->state) + ", not finished";
    return 409;
  }
  finished_.erase({r->end_ns, id});
  touched_.erase(id);  // its last state need not be written: the record is deleted
  pending_reasons_.forget(id);
  erase_record(id);
  write_.deleted.push_back(id);
  *ticket = flush();
  return 200;
}

uint64_t ServerState::flush() {
  if (options_.keep_finished_jobs > 0) trim_finished();
  for (JobId id : touched_) {
    auto& r = records_.at(id);
    write_.jobs.push_back({id, state_name(r.state), encode_record(r)});
    journal_.record(id, r.job.namespace_, r.job.name, r.state == JobState::kCancelled);
    r.rv = journal_.rv_of(id);
  }
  if (!touched_.empty()) journal_changed();
  touched_.clear();
  if (write_.empty() || !store_) {
    write_ = Write{};
    return 0;
  }
  Write w = std::move(write_);
  write_ = Write{};
  return store_->enqueue(std::move(w));
}

uint64_t ServerState::persist_config(const std::string& text) {
  write_.meta.push_back({"config", text});
  return flush();
}

}  // namespace sluice::server
