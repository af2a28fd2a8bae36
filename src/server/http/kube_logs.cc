// GET /api/v1/namespaces/{ns}/pods/{pod}/log (docs/kubernetes.md): the pod's log through the
// agents' own channel, as GET /v1/jobs/{id}/logs (logs.cc): the reader is parked without a
// thread until the agent answers. tailLines and limitBytes are applied to the answer.
// follow=true of a pod that ended is that answer (its log is complete, as Kubernetes ends the
// stream there); of a running pod, a chunked stream that the watch thread feeds with what the
// log gains (kube_watch.h: LogFollow) until the pod's run ends.
#include "server/http/kube.h"
#include "server/http/kube_watch.h"
#include "server/http/reply.h"
#include "server/http/util.h"
#include "server/server.h"

namespace sluice::server {

namespace kube {

std::string last_lines(std::string_view log, int64_t n) {
  if (n < 0) return std::string(log);
  if (n == 0) return {};
  size_t end = log.size();
  if (end > 0 && log[end - 1] == '\n') --end;  // the last line's own newline
  size_t start = end;
  for (int64_t seen = 0; start > 0; --start)
    if (log[start - 1] == '\n' && ++seen > n - 1) break;
  return std::string(log.substr(start));
}

void shape_log(net::Response& res, int64_t tail_lines, int64_t limit_bytes) {
  if (res.status >= 300) return to_status(res);
  if (tail_lines >= 0) res.body = last_lines(res.body, tail_lines);
  if (limit_bytes >= 0 && res.body.size() > static_cast<size_t>(limit_bytes))
    res.body.resize(static_cast<size_t>(limit_bytes));
}

}  // namespace kube

namespace {

struct KubeLogQuery {
  int64_t tail_lines = -1, limit_bytes = -1;
  bool follow = false;
};

// Why sluice cannot honour a pods/log parameter (docs/kubernetes.md, "Logs"). A pod writes its
// log file itself (O_APPEND, so its agent cannot refuse or delay its bytes): nothing records
// when a line was written, and a pod's runs on one node write one file.
constexpr const char* kNoTimes =
    "sluice's pod logs carry no times (a pod writes its log file itself; nothing records when a "
    "line was written)";
struct LogRefusal {
  const char *param, *flag, *why;
};
constexpr LogRefusal kLogRefusals[] = {
    {"sinceSeconds", "--since", kNoTimes},
    {"sinceTime", "--since-time", kNoTimes},
    {"timestamps", "--timestamps", kNoTimes},
    {"previous", "--previous",
     "a pod's runs are not kept apart (its log is the file on its current or last run's node, "
     "which a later run there appends to)"}};

// tailLines, limitBytes, follow (`container` names the pod's one container); what sluice cannot
// honour is refused, not ignored, with what it does take.
std::string read_kube_log_query(const net::Request& req, KubeLogQuery* q) {
  for (const auto& no : kLogRefusals)
    if (req.has_param(no.param) && req.get_param_value(no.param) != "false")
      return std::string(no.param) + " (kubectl logs " + no.flag + "): not supported: " + no.why +
             "; supported: tailLines (--tail), limitBytes (--limit-bytes), follow (-f)";
  for (auto [key, out] : {std::pair{"tailLines", &q->tail_lines}, {"limitBytes", &q->limit_bytes}})
    if (req.has_param(key)) {
      auto n = parse_id(req.get_param_value(key));
      if (!n || *n > (JobId{1} << 62))
        return std::string(key) + ": expected a non-negative integer";
      *out = static_cast<int64_t>(*n);
    }
  q->follow = req.get_param_value("follow") == "true";
  return {};
}

}  // namespace

// On a worker: parks the reader (false), or writes the answer to send now (true).
bool Server::kube_ask_log(const net::Request& req, const net::Responder& r, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return kube::to_status(res), true;
  const std::string ns = req.matches[1], pod = req.matches[2];
  kube::Call c{.req = req, .caller = *caller};
  c.path = {.version = "v1", .ns = ns, .resource = "pods", .name = pod, .sub = "log"};
  if (!caller->sees(ns)) return reply(res, 403, kube::forbidden(c, "get", ns)), true;
  KubeLogQuery q;
  if (auto why = read_kube_log_query(req, &q); !why.empty())
    return kube::fail_status(res, 400, why), true;
  const auto split = kube::split_pod_name(pod);
  std::lock_guard lk(state_->mu());
  const JobRecord* rec = split ? kube_job_named(ns, split->first) : nullptr;
  if (!rec || split->second >= rec->pods.size())
    return reply(res, 404, kube::not_found(c, pod)), true;
  const auto index = static_cast<int32_t>(split->second);
  const PodRun& run = rec->pods[split->second];
  if (q.follow && !run.exited && !is_terminal(rec->state)) {
    if (q.limit_bytes >= 0)
      return kube::fail_status(res, 400, "limitBytes: not supported with follow by sluice"), true;
    auto f = std::make_shared<kube::LogFollow>(r);
    f->job = rec->job.id;
    f->pod = index;
    f->run = run.run;
    f->node = run.node;
    f->tail_lines = q.tail_lines;
    std::lock_guard wl(watch_mu_);
    if (watches_.size() + follows_.size() >= kube::kMaxWatches) {
      kube::fail_status(res, 429, "too many watches and followed logs open: try again later");
      res.set_header("Retry-After", "5");
      return true;
    }
    f->out = r.stream({.content_type = "text/plain"});
    if (f->out) follows_.push_back(std::move(f));
    state_->set_journal_watched(true);
    state_->journal_cv().notify_all();
    return false;
  }
  ServerState::LogPart part{.max_bytes = static_cast<int64_t>(options_.log_max_bytes)};
  if (q.tail_lines >= 0)
    part.tail_bytes = part.max_bytes;  // lines are cut on the answer
  else if (q.limit_bytes >= 0)
    part.offset = 0, part.max_bytes = std::min(part.max_bytes, q.limit_bytes);
  const auto ask = state_->request_log(rec->job.id, index, part);
  if (!ask.id) return kube::fail_status(res, ask.status, ask.error), true;
  std::lock_guard wl(log_readers_mu_);
  log_readers_.emplace(
      ask.id, LogReader{.responder = r,
                        .deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10),
                        .node = run.node,
                        .kube = true,
                        .tail_lines = q.tail_lines,
                        .limit_bytes = q.limit_bytes});
  return false;
}

// Each round of the watch thread (under the state lock): asks for what each followed log
// gained, or ends the streams whose pod's run ended and was read to its end.
void Server::kube_follow_round() {
  std::vector<std::shared_ptr<kube::LogFollow>> fs;
  {
    std::lock_guard wl(watch_mu_);
    std::erase_if(follows_, [](const auto& f) { return !f->out.open(); });
    fs = follows_;
  }
  for (auto& f : fs) {
    if (f->asking) continue;
    const JobRecord* r = state_->find(f->job);
    const auto i = static_cast<size_t>(f->pod);
    const PodRun* p = r && i < r->pods.size() ? &r->pods[i] : nullptr;
    if (!p || p->run != f->run || f->drained) {
      f->out.end();  // gone, another run (a new pod), or read to its end
      continue;
    }
    const bool ended = p->exited || is_terminal(r->state);
    // The first read with tailLines takes the log's end (its lines are cut on the answer);
    // every other read what the log gained since the bytes already sent.
    ServerState::LogPart part{.max_bytes = static_cast<int64_t>(options_.log_max_bytes)};
    if (f->first && f->tail_lines >= 0)
      part.tail_bytes = part.max_bytes;
    else
      part.offset = f->offset;
    const auto ask = state_->request_log(f->job, f->pod, part);
    if (!ask.id) {
      if (ended) f->out.end();  // its node cannot be asked any more
      continue;                 // else its node is away: asked again next round
    }
    f->asking = true;
    f->asked_after_end = ended;
    std::lock_guard wl(log_readers_mu_);
    log_readers_.emplace(
        ask.id, LogReader{.responder = f->responder,
                          .deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10),
                          .node = f->node,
                          .kube = true,
                          .follow = f});
  }
}

// The agent's answer to a followed log's request: what the log gained, to its stream.
void Server::kube_follow_answer(kube::LogFollow& f, int status, const std::string& body,
                                int64_t size) {
  std::string text;
  {
    std::lock_guard lk(state_->mu());
    f.asking = false;
    if (status != 200) return;  // asked again next round
    const bool tail = f.first && f.tail_lines >= 0;
    text = tail ? kube::last_lines(body, f.tail_lines) : body;
    // After a tail, the log's size on the node (X-Sluice-Log-Size) is where the next read
    // starts; else the bytes from offset on came as they are.
    f.offset = tail && size >= 0 ? size : f.offset + static_cast<int64_t>(body.size());
    f.first = false;
    if (f.asked_after_end && body.empty()) f.drained = true;
  }
  if (body.empty()) return;  // asked again next round (at most a second)
  f.out.write(std::move(text));
  state_->journal_cv().notify_all();  // more may be there: the next round asks at once
}

}  // namespace sluice::server
