#pragma once
// Who leads among replicas (an etcd-backed control plane, docs/ha.md), asked of the replicas
// themselves: the agent's leader watch (src/agent/leader_watch.cc) and the CLI's first request
// with several servers (src/cli/client_http.cc). Shared by both; httplib is linked by each.
#include <httplib.h>

#include <cstddef>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace sluice::proto {

// Asks every server but servers[current] (current >= size: all of them) who leads (GET /readyz,
// timeout_ms to connect and to answer), in order: the index of one that answers 200 (a leader
// that is ready), or of the server a standby names in its Sluice-Leader header; none when every
// answer names servers[current], names a URL not in the list, or no server answers.
inline std::optional<size_t> witness_leader(const std::vector<std::string>& servers, size_t current,
                                            int timeout_ms) {
  const time_t s = timeout_ms / 1000, us = (timeout_ms % 1000) * 1000;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i == current) continue;
    httplib::Client cli(servers[i]);
    cli.set_connection_timeout(s, us);
    cli.set_read_timeout(s, us);
    auto res = cli.Get("/readyz");
    if (!res) continue;
    if (res->status == 200) return i;
    const std::string named = res->get_header_value("Sluice-Leader");
    for (size_t j = 0; j < servers.size(); ++j)
      if (j != current && !named.empty() && servers[j] == named) return j;
  }
  return std::nullopt;
}

}  // namespace sluice::proto
