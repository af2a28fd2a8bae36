#pragma once
// Pods with an image run in a container (docs/agent.md, "Images"): the agent's container
// runtime (`--container-runtime podman`, or a command with its global flags such as
// "podman --runtime runc") runs the image in place of the sandbox, with the pod's work dir
// mounted at the same path, its environment, its user and the host's network (a gang's pods
// reach each other as without containers).
#include <optional>
#include <string>
#include <vector>

#include "agent/pod_identity.h"
#include "proto/protocol.h"

namespace sluice::agent {

struct ContainerLaunch {
  // `runtime run ... IMAGE`: the pod's arguments follow. argv[0] is an absolute path.
  std::vector<std::string> argv;
  // `runtime rm -f NAME`: run after the pod's process ended, so that a container whose runtime
  // client was killed does not run on.
  std::vector<std::string> cleanup;
};

// The runtime command line split at spaces; empty: none. runtime[0] is looked up on PATH (it may
// be `env`, to give the runtime its own environment: "env CONTAINERS_CONF=/etc/x podman").
std::vector<std::string> split_runtime(const std::string& command);

// The launch of assignment `a` in `runtime` (absolute runtime[0]). env: KEY=VALUE entries (PATH
// is left to the image); gpu_devices: --device values of its GPUs (CDI names; none for fake
// GPUs). Limits (ulimits) are the runtime's configuration (containers.conf).
ContainerLaunch container_launch(const std::vector<std::string>& runtime,
                                 const proto::Assignment& a, const std::string& work_dir,
                                 const std::vector<std::string>& env,
                                 const std::optional<PodIdentity>& identity,
                                 const std::vector<std::string>& gpu_devices);

}  // namespace sluice::agent
