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

// Thrown by `sluice run --pty` with that status (main() exits with it as it is: 127 or 130 are
// the shell's, not CLI11's own codes of 100 and up, which main() turns into 1).
struct ExitStatus {
  int code = 0;
};

}  // namespace sluice::cli
