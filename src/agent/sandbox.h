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
  // An interactive pod (`sluice run --pty`): it keeps its controlling terminal, so bwrap's
  // --new-session is left out. That flag keeps a pod from pushing input (TIOCSTI) into the
  // terminal it was started from; this terminal is the pod's own pseudo-terminal, whose input
  // only the pod's own shell reads, so there is nothing to push into.
  bool tty = false;
};

// argv of bwrap up to and including "--": the pod's command follows.
std::vector<std::string> bwrap_argv(const std::string& bwrap, const SandboxPaths& paths,
                                    const std::vector<int32_t>& gpus);

// The bwrap executable on PATH ("" if none).
std::string find_bwrap(const std::string& name_or_path);

}  // namespace sluice::agent
