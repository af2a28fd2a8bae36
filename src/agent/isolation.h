#pragma once
// How a pod is kept apart from the agent and from other tenants' pods (docs/agent.md, "What a
// pod can see and do"): the user it runs as, its environment, the optional bubblewrap sandbox
// and its cgroup. The agent asks it to complete every launch.
//
// A root agent runs each pod as an unprivileged user (pod_identity.h) from a minimal
// environment; a non-root agent cannot change users and keeps running pods as itself, with
// its own environment less SLUICE_* (it says so at start).
#include <functional>
#include <memory>
#include <string>

#include "agent/cgroup.h"
#include "agent/container.h"
#include "agent/pod_env.h"
#include "agent/pod_identity.h"
#include "agent/process_runner.h"
#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

struct IsolationOptions {
  IdentityOptions identity;
  std::string sandbox = "none";  // none | bwrap
  std::string bwrap = "bwrap";   // the executable (name on PATH, or a path)
  CgroupOptions cgroups;
  // -1: pods change user when the agent is root (geteuid() == 0); 0: never; 1: always (fails
  // unless root).
  int drop_privileges = -1;
  // Pods with an image run under this container runtime command (container.h), e.g. "podman"
  // or "podman --runtime runc"; "": none (such pods run on the node only where their
  // ClusterQueue allows it). CDI device names pass the pod's GPUs (nvidia.com/gpu=N) unless
  // the GPUs are fake.
  std::string container_runtime;
  bool container_gpu_devices = true;
  // A root agent's pods outside the sandbox and containers get a /proc that hides other uids'
  // processes (spawn.h, ChildSetup::private_proc) where the machine allows it.
  bool private_proc = true;
  // The sluice binary: STATE/bin/srun links to it and goes first on every pod's PATH, so
  // `srun` in a job is a job step (docs/cli.md, "Job steps"); "": no such link.
  std::string step_exe;
};

class PodIsolation {
 public:
  // Creates the state directory when it is missing (mode 0711), checks the options, finds
  // bwrap and the cgroup root, and logs one line per choice.
  static Result<std::unique_ptr<PodIsolation>> create(
      IsolationOptions options, const std::string& state_dir,
      const std::function<void(const std::string&)>& log);

  // Completes `launch` (its ref and argv set) for assignment `a`: user, environment, sandbox,
  // cgroup requests. Returns "" or why the pod may not run here.
  std::string prepare(const proto::Assignment& a, PodContext ctx, const char* const* base_env,
                      PodLaunch& launch);

  std::shared_ptr<Cgroups> cgroups() const { return cgroups_; }
  bool drops_privileges() const { return resolver_ != nullptr; }
  // The runtime's name ("podman"), for the server; "": none.
  std::string container_runtime() const;

 private:
  PodIsolation() = default;
  // The steps of prepare(); each returns "" or why the pod may not run here.
  std::string use_working_dir(const proto::Assignment& a, const std::string& node,
                              const PodPaths& paths, PodLaunch& launch, bool* shared) const;
  std::string choose_identity(const proto::Assignment& a, bool shared, const PodPaths& paths,
                              PodContext& ctx, PodLaunch& launch) const;
  std::string choose_wrapper(const proto::Assignment& a, const PodPaths& paths,
                             PodLaunch& launch) const;

  std::string state_dir_;  // absolute
  std::string step_bin_;   // STATE/bin with the `srun` link; "": none
  std::unique_ptr<IdentityResolver> resolver_;
  std::string bwrap_;                 // "": no sandbox
  std::vector<std::string> runtime_;  // runtime_[0] absolute; empty: none
  bool container_gpu_devices_ = true;
  bool private_proc_ = false;  // what the probe at start found possible and the options allow
  std::shared_ptr<Cgroups> cgroups_;
};

}  // namespace sluice::agent
