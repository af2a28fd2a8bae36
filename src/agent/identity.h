#pragma once
// What makes an agent its node (docs/agent.md, "Trust model"), all in its state directory:
//
//   agent.lock       an OFD lock held while an agent runs on this state directory: a second
//                    agent on it is refused, and the fencer (fence.h) sees whether one runs.
//   node-credential  the node's credential (0600): made here at the first start, given to the
//                    server at the first registration with the join token, and from then on
//                    the only thing that authenticates this node. Keep it with the state dir.
//   pod-token.key    (0600) the key a pod's checkpoint token is derived from: a pod can report
//                    its own checkpoint to the agent's endpoint and nothing else.
#include <string>

#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

class AgentIdentity {
 public:
  // Takes the state directory's lock and reads (or makes) the credential and the key.
  static Result<AgentIdentity> open(const std::string& state_dir);
  AgentIdentity(AgentIdentity&& o) noexcept;
  AgentIdentity& operator=(AgentIdentity&& o) noexcept;
  AgentIdentity(const AgentIdentity&) = delete;
  AgentIdentity& operator=(const AgentIdentity&) = delete;
  ~AgentIdentity();  // releases the lock

  const std::string& credential() const { return credential_; }
  // The bearer token of one pod's checkpoint report.
  std::string checkpoint_token(proto::PodRef ref) const;

 private:
  AgentIdentity() = default;
  int lock_fd_ = -1;
  std::string credential_;
  std::string pod_key_;
};

// Whether an agent holds the state directory's lock now (without taking it).
bool agent_running(const std::string& state_dir);

// A secret file's content, made with `make` (mode 0600) when the file does not exist. A file
// readable by others is refused: a secret must be private to the agent's user.
Result<std::string> read_or_make_secret(const std::string& path, size_t min_chars);

}  // namespace sluice::agent
