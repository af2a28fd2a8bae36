#pragma once
// `sluice run --pty` (Slurm's `srun --pty bash`; docs/cli.md "Interactive sessions"): once the
// job is submitted, wait for its pod to start, then attach this terminal to the pod's
// pseudo-terminal on its node: the terminal in raw mode, keystrokes and window sizes sent to
// POST /v1/jobs/{id}/tty, the pod's output read back from its log as `logs -f` does, until the
// pod ends. The terminal is restored on every way out.
#include "cli/client_http.h"

namespace sluice::cli {

// The exit status for `sluice run`: the pod's exit code once it ends (its shell's), or 128 +
// the signal that interrupted the session (the job is then cancelled, as srun does). A job
// that ends without having started, or a server that cannot be reached, is a failure (fail()).
int attach_pty(const Connection& conn, unsigned long long id);

}  // namespace sluice::cli
