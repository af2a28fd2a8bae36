// ServerState, interactive jobs (`sluice run --pty`, docs/cli.md "Interactive sessions"): the
// user's keystrokes and window size go to the pod's agent with its node's next sync reply, like
// log requests; the pod's output comes back as its log. The server never dials an agent.
#include "proto/base64.h"
#include "server/state.h"

namespace sluice::server {

int ServerState::send_tty(JobId id, const std::string& data, int32_t rows, int32_t cols,
                          std::string* error) {
  const JobRecord* r = find(id);
  const std::string job = "job " + std::to_string(id);
  if (!r) return *error = "no " + job, 404;
  if (!r->job.exec().tty) {
    *error = job +
             " is not interactive (submitted without --pty): it has no terminal to attach to; "
             "`sluice logs -f " +
             std::to_string(id) + "` follows its output";
    return 409;
  }
  if (r->state != JobState::kRunning || r->pods.empty() || !r->pods.front().started ||
      r->pods.front().exited) {
    *error = job + " is " + state_name(r->state) +
             (r->state == JobState::kRunning ? " but its pod has not started yet" : "") +
             ": its terminal takes input only while its pod runs";
    return 409;
  }
  const std::string& node = r->pods.front().node;
  NodeState* n = node_by_name(node);
  if (!n || !n->registered || !n->ready) {
    *error = job + " runs on node " + node +
             ", which is NotReady (its agent is not syncing): the terminal cannot be reached "
             "until the agent is back (`sluice nodes`)";
    return 503;
  }
  if (n->tty_bytes + data.size() > kMaxTtyQueued) {
    *error = "node " + node + " has " + std::to_string(n->tty_bytes) +
             " bytes of keystrokes queued for its agent already; try again";
    return 503;
  }
  n->tty.push_back({id, 0, proto::base64_encode(data), rows, cols});
  n->tty_bytes += data.size();
  notify_outbox(node);
  return 200;
}

}  // namespace sluice::server
