#pragma once
// Starting the control plane and waiting on it: what `sluice serve` and `sluice up` share.
#include <signal.h>

#include <memory>

#include "cli/serve_options.h"
#include "core/model/result.h"
#include "server/server.h"

namespace sluice::cli {

// Blocks SIGINT/SIGTERM/SIGHUP in every thread (call before starting any); wait_for_signal()
// takes them.
void block_signals(sigset_t* set);

// Waits for SIGINT/SIGTERM, or `seconds` (<= 0: forever). Returns the signal, or 0 on timeout
// or after a SIGHUP, which reloads the server's --config files (a bad one is refused and logged).
int wait_for_signal(const sigset_t& set, double seconds, server::Server& srv);

// The server of `a` (its traces, when an endpoint is configured), started; `store` null: the
// one --data-dir or --store names.
Result<std::unique_ptr<server::Server>> start_server(
    ServeArgs& a, std::unique_ptr<server::Store> store = nullptr);

}  // namespace sluice::cli
