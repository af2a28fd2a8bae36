// The agent's logs: a pod's log tail, for its own /v1/logs endpoint and for the server's log
// requests, which ride on sync replies and are posted back on the node's authenticated channel.
// Interactive pods' keystrokes ride on sync replies too; their output is their log.
#include <algorithm>

#include "agent/agent.h"
#include "agent/log_slice.h"
#include "agent/server_client.h"
#include "proto/base64.h"

namespace sluice::agent {

namespace {
constexpr size_t kMaxQueuedLogs = 64;  // log requests waiting for the uploader; beyond: dropped
constexpr int64_t kUploadTimeoutS = 10;
}  // namespace

// The part of the pod's log the request asks for (log_slice.h), or a JSON 404 that says why.
Agent::PodLog Agent::pod_log(proto::PodRef ref, const proto::LogRequest& part) const {
  LogView view{part.tail_bytes, part.offset,
               part.max_bytes > 0 ? std::min(part.max_bytes, kMaxLogBytes) : kDefaultLogBytes};
  auto text = read_log(pod_paths(options_.state_dir, ref).log, view);
  if (!text) {
    const std::string missing =
        "no log for job " + std::to_string(ref.job) + " pod " + std::to_string(ref.pod) +
        " on node " + options_.node +
        (options_.keep_finished > 0 ? " (the agent keeps the logs of its last " +
                                          std::to_string(options_.keep_finished) + " finished pods)"
                                    : "");
    return {404, proto::dump_json(nlohmann::json(proto::ErrorBody{missing, {}})),
            "application/json"};
  }
  return {200, std::move(text->text), "text/plain", text->size};
}

void Agent::upload_logs(const std::vector<proto::LogRequest>& logs) {
  if (logs.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (const auto& l : logs) {
      if (log_queue_.size() >= kMaxQueuedLogs) {
        log("too many log requests queued: dropping the request for " + ref_name({l.job, l.pod}) +
            " (the server answers 504)");
        continue;
      }
      log_queue_.push_back(l);
    }
  }
  log_cv_.notify_one();
}

void Agent::apply_tty(const std::vector<proto::TtyInput>& input) {
  for (const auto& t : input) {
    const std::string bytes = proto::base64_decode(t.data);
    if (bytes.empty() && !t.data.empty()) {
      log("keystrokes for " + ref_name({t.job, t.pod}) + " are not base64: dropped");
      continue;
    }
    if (!runner_->tty_input({t.job, t.pod}, bytes, t.rows, t.cols))
      log("keystrokes for " + ref_name({t.job, t.pod}) +
          " not delivered: no terminal of that pod here, or its input is full");
  }
}

// Posts each requested log back to the server on the node's own authenticated channel.
void Agent::log_loop() {
  auto cli = make_client();
  size_t at = server_at_;
  cli->options().read_timeout = std::chrono::seconds(kUploadTimeoutS);
  for (;;) {
    proto::LogRequest l;
    {
      std::unique_lock lock(mu_);
      log_cv_.wait(lock, [&] { return quit_ || !log_queue_.empty(); });
      if (quit_) return;
      l = log_queue_.front();
      log_queue_.pop_front();
    }
    const PodLog tail = pod_log({l.job, l.pod}, l);
    if (at != server_at_) {  // the request came from the leader the sync loop moved to
      at = server_at_;
      cli = make_client();
      cli->options().read_timeout = std::chrono::seconds(kUploadTimeoutS);
    }
    auto res = cli->post("/v1/agents/" + options_.node + "/logs/" + std::to_string(l.id) +
                             "?status=" + std::to_string(tail.status) +
                             (tail.size >= 0 ? "&size=" + std::to_string(tail.size) : ""),
                         tail.body, tail.content_type, bearer(identity_->credential()));
    if (!res || res->status != 200)
      log("log upload for " + ref_name({l.job, l.pod}) + " failed: " + error_text(res));
  }
}

}  // namespace sluice::agent
