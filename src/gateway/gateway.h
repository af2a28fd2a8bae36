#pragma once
// The inference gateway: an asynchronous HTTP/1.1 reverse proxy with per-pool admission control.
// One io_context on one thread owns all state (pools, queues, tenants, metrics), so admission
// sees a consistent view without locks.
#include <string>

#include "gateway/config.h"

namespace sluice::gateway {

struct RunOptions {
  std::string port_file;  // when set, the bound port is written there once listening
};

// Serves until SIGTERM or SIGINT, then drains: stops accepting, lets queued and in-flight requests
// finish, closes idle connections and returns. Returns the process exit code: 0 after a clean
// drain, 1 when the drain timed out or the listener could not be opened.
int run_gateway(const GatewayConfig& cfg, const RunOptions& opts);

}  // namespace sluice::gateway
