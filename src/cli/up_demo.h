#pragma once
// `sluice up --demo`: the demo's jobs (examples/demo/jobs.yaml, embedded), submitted over HTTP
// at their submitTime offsets like any client would, with progress between.
#include <signal.h>

#include "cli/up_status.h"
#include "server/server.h"

namespace sluice::cli {

// Submits the demo's jobs on `status`'s clock. False when a signal came first (the caller
// stops); *rc = 1 once a submission failed.
bool run_demo(UpStatus& status, const sigset_t& set, server::Server& srv, int* rc);

}  // namespace sluice::cli
