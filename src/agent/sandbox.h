#pragma once
// The optional bubblewrap sandbox around a pod (--sandbox bwrap; docs/agent.md, "Sandbox").
//
// The pod's command runs as `bwrap OPTIONS -- COMMAND...`, already under the pod's uid (bwrap
// then uses an unprivileged user namespace; Debian allows those by default):
//   - the host read-only (--ro-bind / /), the agent's state directory hidden (a tmpfs over it),
//     the pod's work directory the only writable host path;
//   - a private /tmp and /var/tmp, /dev with only the basic nodes plus, on GPU nodes,
//     /dev/nvidiactl, /dev/nvidia-uvm(-tools), /dev/nvidia-modeset and /dev/nvidia<i> for the
//     pod's GPUs (device index i = the node's minor number, see docs);
//   - its own PID, IPC, UTS and cgroup namespaces (it sees only its own processes), the host's
//     network (gangs talk to each other and to the agent).
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::agent {

struct SandboxPaths {
  std::string state_dir;  // hidden
  std::string work_dir;   // writable, the working directory
  // The job's own working directory (`sluice run`'s): writable too (as far as the pod's user
  // may write there) and the working directory instead; "": none.
  std::string start_dir;
  // An interactive pod (`sluice run --pty`): its terminal is its own pseudo-terminal.
  bool tty = false;
};

// The sandbox stays in the pod's process group (no bwrap --new-session): a stop's SIGTERM
// reaches the pod's processes, and SIGKILL of the group reaches its PID namespace's init,
// whose death ends every process inside, even one that left the group. When the pod's command
// ends, the outer bwrap exits and the agent SIGKILLs what is left of the group (bwrap's init
// would otherwise wait for the pod's background processes); the fencer and an agent that
// adopted the pod do the same (kill_group_remnants). Not --die-with-parent: it makes the outer
// bwrap die with the agent, so every sandboxed pod would end with an agent restart.
// --new-session kept a pod from pushing input (TIOCSTI) into the terminal it was started
// from; a pod has none: its stdin is /dev/null (or its own pseudo-terminal under `sluice run
// --pty`) and it leads a session the agent made for it.

// Why `dir` cannot be a sandboxed pod's working directory ("" when it can): binding it would
// replace what the sandbox gives the pod itself (its /proc, /dev, /tmp: the host's processes,
// other pods' files), expose /sys or the agent's state, or bind the whole host read-write.
std::string sandbox_reserved(const std::string& dir, const std::string& state_dir);

// argv of bwrap up to and including "--": the pod's command follows.
std::vector<std::string> bwrap_argv(const std::string& bwrap, const SandboxPaths& paths,
                                    const std::vector<int32_t>& gpus);

// The bwrap executable on PATH ("" if none).
std::string find_bwrap(const std::string& name_or_path);

}  // namespace sluice::agent
