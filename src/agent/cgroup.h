#pragma once
// cgroup v2 limits for pods (docs/agent.md, "CPU and memory limits").
//
// Each pod gets <root>/<job>-<pod> with cpu.max (its CPU request: quota = milli-CPU x period /
// 1000) and memory.max (its memory request). The child joins it before exec by writing "0" to
// the group's cgroup.procs (an open descriptor handed to it: one write(2), allowed after
// vfork), so the pod and everything it starts, even a process that left its session, stays
// inside; at the end the agent writes cgroup.kill (every process left) and removes the group.
//
// <root> defaults to <cgroup2 mount>/sluice: the top of the hierarchy, where controllers can be
// enabled next to the processes already there. Mode "auto" uses cgroups when the machine
// allows it (a cgroup2 mount with the cpu and memory controllers, writable) and logs why not
// otherwise; "on" makes that an error at start; "off" never touches them.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

struct CgroupOptions {
  std::string mode = "auto";  // auto | on | off
  std::string root;           // "": <cgroup2 mount>/sluice
  std::string mountinfo = "/proc/self/mountinfo";
};

// "<quota> <period>" for cpu.max: milli-CPU -> microseconds of CPU per 100 ms period; "max
// 100000" for 0 (no request).
std::string cpu_max_value(int64_t cpu_milli);
// Bytes for memory.max; "max" for 0.
std::string memory_max_value(int64_t memory_mib);
// The mount point of the cgroup2 file system in a /proc/self/mountinfo text ("" if none).
std::string cgroup2_mount(const std::string& mountinfo_text);

class Cgroups {
 public:
  // nullptr with *skip set: cgroups are off or unavailable (auto); Error: mode "on" and
  // unavailable, or a bad mode.
  static Result<std::unique_ptr<Cgroups>> create(const CgroupOptions& options, std::string* skip);

  // Creates the pod's group with its limits and returns an O_WRONLY descriptor of its
  // cgroup.procs (the caller closes it), or an error.
  Result<int> prepare(proto::PodRef ref, int64_t cpu_milli, int64_t memory_mib);
  // Kills whatever is left in the pod's group and removes it; a group that is not empty yet
  // is retried by sweep(). Safe for a pod that never had one.
  void release(proto::PodRef ref);
  // Retries removals that found the group busy (each at most kRemoveTries times: a group that
  // will not go is left, and named in `gave_up`). Returns the number still pending.
  size_t sweep(std::vector<std::string>* gave_up = nullptr);
  static constexpr int kRemoveTries = 200;
  std::string dir(proto::PodRef ref) const;
  const std::string& root() const { return root_; }

 private:
  explicit Cgroups(std::string root) : root_(std::move(root)) {}
  bool remove(proto::PodRef ref);

  std::string root_;
  std::mutex mu_;
  std::map<proto::PodRef, int> busy_;  // removals to retry, with the tries so far
};

}  // namespace sluice::agent
