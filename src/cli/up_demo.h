#pragma once
// `sluice up --demo`: the demo's jobs (examples/demo/jobs.yaml, embedded), submitted over HTTP
// at their submitTime offsets like any client would, with progress between.
#include <signal.h>

#include <string>

#include "cli/up_status.h"
#include "core/model/result.h"
#include "server/server.h"

namespace sluice::cli {

// The demo's node pool (examples/demo/pool.yaml) for a server whose data directory is
// `data_dir`: its provisioner (examples/autoscale/local-agents.sh) written there, the pool's
// command pointed at it, with this binary as the agents' and their state in DATA/demo-pool.
Result<std::string> demo_pool_config(const std::string& data_dir);
// Deletes the pool's nodes still up (the provisioner's own `delete`): the demo's agents end
// with it, as its local ones do.
void stop_demo_pool(const std::string& data_dir);

// Submits the demo's jobs on `status`'s clock. False when a signal came first (the caller
// stops); *rc = 1 once a submission failed.
bool run_demo(UpStatus& status, const sigset_t& set, server::Server& srv, int* rc);

}  // namespace sluice::cli
