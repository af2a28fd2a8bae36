#pragma once
// Who leads among replicas (an etcd-backed control plane, docs/ha.md), asked of the replicas
// themselves over net::Client: the agent's leader watch (src/agent/leader_watch.cc) and the
// CLI's first request with several servers (src/cli/client_http.cc).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace sluice::net {

// Asks every server but servers[current] (current >= size: all of them) who leads (GET /readyz,
// timeout_ms to connect and to answer), in order: the index of one that answers 200 (a leader
// that is ready), or of the server a standby names in its Sluice-Leader header; none when every
// answer names servers[current], names a URL not in the list, or no server answers.
std::optional<size_t> witness_leader(const std::vector<std::string>& servers, size_t current,
                                     int timeout_ms);

}  // namespace sluice::net
