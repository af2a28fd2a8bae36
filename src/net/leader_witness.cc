#include "net/leader_witness.h"

#include "net/client.h"

namespace sluice::net {

std::optional<size_t> witness_leader(const std::vector<std::string>& servers, size_t current,
                                     int timeout_ms) {
  const std::chrono::milliseconds timeout(timeout_ms);
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i == current) continue;
    Client cli(servers[i], {.connect_timeout = timeout, .read_timeout = timeout});
    auto res = cli.get("/readyz");
    if (!res) continue;
    if (res->status == 200) return i;
    const std::string named = res->get_header_value("Sluice-Leader");
    for (size_t j = 0; j < servers.size(); ++j)
      if (j != current && !named.empty() && servers[j] == named) return j;
  }
  return std::nullopt;
}

}  // namespace sluice::net
