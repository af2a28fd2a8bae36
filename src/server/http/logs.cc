// Pod logs (docs/api.md, "Logs"): GET /v1/jobs/{id}/logs asks the pod's agent for the bytes
// with its node's next sync reply, and the agent posts them back on its own authenticated
// channel (POST /v1/agents/{node}/logs/{request}). The server never dials an address a peer gave
// it, and a reader waiting for an agent holds no thread: the request is parked with its
// Responder until the log arrives or kLogWait passes (the scheduling loop's tick answers 504),
// so that a caller reading many logs cannot take the workers from anyone (issue 41).
#include <algorithm>

#include "secret/secret.h"
#include "server/http/kube.h"
#include "server/http/kube_watch.h"
#include "server/http/util.h"
#include "server/server.h"

namespace sluice::server {

namespace {

constexpr auto kLogWait = std::chrono::seconds(10);

// The part of the log asked for, or an error message.
std::string read_log_query(const net::Request& req, int64_t max_bytes, int32_t* pod,
                           ServerState::LogPart* part) {
  part->max_bytes = max_bytes;
  if (req.has_param("pod")) {
    auto p = parse_id(req.get_param_value("pod"));
    if (!p || *p > 1'000'000) return "pod: expected a pod index";
    *pod = static_cast<int32_t>(*p);
  }
  if (req.has_param("tail_bytes")) {
    auto n = parse_id(req.get_param_value("tail_bytes"));
    if (!n) return "tail_bytes: expected a non-negative integer";
    part->tail_bytes = static_cast<int64_t>(std::min<JobId>(*n, static_cast<JobId>(max_bytes)));
  }
  if (req.has_param("offset")) {
    auto n = parse_id(req.get_param_value("offset"));
    if (!n || *n > (JobId{1} << 62)) return "offset: expected a non-negative integer";
    part->offset = static_cast<int64_t>(*n);
  }
  return {};
}

// "/v1/agents/NODE/logs/ID": only that node's own credential may send a large body.
bool node_of_path_admitted(ServerState& state, const std::string& path,
                           const std::string& authorization) {
  const std::string prefix = "/v1/agents/";
  const auto end = path.find('/', prefix.size());
  if (path.rfind(prefix, 0) != 0 || end == std::string::npos) return false;
  return state.node_admitted(path.substr(prefix.size(), end - prefix.size()),
                             secret::bearer(authorization));
}

}  // namespace

void Server::routes_logs() {
  http_->Async("GET", R"(/v1/jobs/([^/]+)/logs)", [this](net::Request& req, net::Responder r) {
    r.to_worker([this, &req, r] {
      net::Response res;
      if (ask_for_log(req, r, res)) r.send(std::move(res));
    });
  });
  http_->Post(
      R"(/v1/agents/([^/]+)/logs/(\d+))",
      [this](const net::Request& req, net::Response& res) { deliver_log(req, res); },
      {.lane = kAgentLane,
       .max_body_bytes = options_.log_max_bytes + (64 << 10),
       .large_body_allowed = [this](const std::string& path, const std::string& authorization) {
         return node_of_path_admitted(*state_, path, authorization);
       }});
}

// On a worker: asks the agent for the log and parks the reader (false), or writes the error
// to answer now (true).
bool Server::ask_for_log(const net::Request& req, const net::Responder& r, net::Response& res) {
  auto caller = caller_of(req, res);
  if (!caller) return true;
  int32_t pod = 0;
  ServerState::LogPart part;
  if (auto why = read_log_query(req, static_cast<int64_t>(options_.log_max_bytes), &pod, &part);
      !why.empty()) {
    fail(res, 400, why);
    return true;
  }
  std::lock_guard lk(state_->mu());
  const auto* rec = visible_job(*caller, req.matches[1], res);
  if (!rec) return true;
  const JobId id = rec->job.id;
  if (rec->pods.empty()) {
    fail(res, 404, "job " + std::to_string(id) + " has not run yet: no logs");
    return true;
  }
  if (static_cast<size_t>(pod) >= rec->pods.size()) {
    fail(res, 404,
         "job " + std::to_string(id) + " has " + std::to_string(rec->pods.size()) + " pod(s)");
    return true;
  }
  const auto ask = state_->request_log(id, pod, part);
  if (!ask.id) {
    fail(res, ask.status, ask.error);
    return true;
  }
  std::lock_guard wl(log_readers_mu_);
  log_readers_.emplace(ask.id, LogReader{r, std::chrono::steady_clock::now() + kLogWait,
                                         rec->pods[static_cast<size_t>(pod)].node});
  return false;
}

// An agent's answer to a log request of its sync reply: the body is the log (or an error).
void Server::deliver_log(const net::Request& req, net::Response& res) {
  const std::string node = req.matches[1];
  const std::string bearer = secret::bearer(req.get_header_value("Authorization"));
  const auto id = parse_id(req.matches[2]);
  const auto status = parse_id(req.get_param_value("status"));
  // The log's size on the node (agents before issue 17 send none: -1).
  const auto size = parse_id(req.get_param_value("size"));
  std::optional<ServerState::LogFetch> got;
  {
    std::lock_guard lk(state_->mu());
    if (!state_->node_admitted(node, bearer))
      return fail(res, 401, "missing or wrong credential for node \"" + node + "\"");
    if (!id || !status || *status < 200 || *status > 599)
      return fail(res, 400, "expected /v1/agents/NODE/logs/ID?status=CODE");
    got = state_->deliver_log(node, *id, static_cast<int>(*status), req.body,
                              req.get_header_value("Content-Type"),
                              size ? static_cast<int64_t>(*size) : -1);
  }
  if (!got) return fail(res, 404, "no log request " + req.matches[2].str() + " for node " + node);
  if (auto reader = take_log_reader(*id); reader && reader->follow) {
    kube_follow_answer(*reader->follow, got->status, got->body, got->size);
  } else if (reader) {
    net::Response out;
    out.status = got->status;
    if (got->size >= 0) out.set_header("X-Sluice-Log-Size", std::to_string(got->size));
    out.set_content(std::move(got->body),
                    got->content_type.empty() ? "text/plain" : got->content_type);
    if (reader->kube) kube::shape_log(out, reader->tail_lines, reader->limit_bytes);
    reader->responder.send(std::move(out));
  }
  reply(res, 200, nlohmann::json{{"delivered", true}});
}

std::optional<Server::LogReader> Server::take_log_reader(uint64_t id) {
  std::lock_guard wl(log_readers_mu_);
  auto it = log_readers_.find(id);
  if (it == log_readers_.end()) return std::nullopt;
  LogReader out = std::move(it->second);
  log_readers_.erase(it);
  return out;
}

// From the scheduling loop (every tick) and at stop: readers whose agent did not answer in
// time get a 504 (at stop: all of them, 503), and their requests are withdrawn.
void Server::expire_log_readers(bool all) {
  std::vector<std::pair<uint64_t, LogReader>> expired;
  {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard wl(log_readers_mu_);
    for (auto it = log_readers_.begin(); it != log_readers_.end();) {
      if (!all && it->second.deadline > now) {
        ++it;
        continue;
      }
      expired.emplace_back(it->first, std::move(it->second));
      it = log_readers_.erase(it);
    }
  }
  if (expired.empty()) return;
  {
    std::lock_guard lk(state_->mu());
    for (const auto& [id, reader] : expired) {
      state_->forget_log(id);
      if (reader.follow) reader.follow->asking = false;  // asked again next round
    }
  }
  for (auto& [id, reader] : expired) {
    net::Response res;
    if (all)
      fail(res, 503, "the server is stopping");
    else
      fail(res, 504,
           "the agent of node " + reader.node +
               " did not answer within 10 s: it may be down or cut off (`sluice nodes` shows "
               "when it was last seen); the log stays on that node");
    if (reader.kube) kube::to_status(res);
    reader.responder.send(std::move(res));
  }
}

}  // namespace sluice::server
