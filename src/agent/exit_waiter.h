#pragma once
// ExitWaiter: how the process runner's supervisor sleeps while it has running pods
// (process_runner.h). It wakes when a pod's process ends (a pidfd per child pod, in one poll),
// when the runner is told something (wake(): an eventfd), or at a timeout. An exit is seen at
// once instead of at the next tick, and a supervisor whose pods all run sleeps until one ends,
// a deadline comes or its slower watch of logs and checkpoint files is due.
#include <sys/types.h>

#include <chrono>
#include <vector>

namespace sluice::agent {

// A pidfd that refers to `pid` (pidfd_open(2), Linux 5.3; close-on-exec), or -1 where the
// kernel has none or the process is gone.
int open_pidfd(pid_t pid);

class ExitWaiter {
 public:
  ExitWaiter();
  ~ExitWaiter();
  ExitWaiter(const ExitWaiter&) = delete;
  ExitWaiter& operator=(const ExitWaiter&) = delete;

  // False without an eventfd: the runner then ticks as it did without pidfds.
  bool usable() const { return wake_fd_ >= 0; }
  // Ends the current wait, or the next one at once (any thread).
  void wake();
  // Sleeps until wake(), until one of `pidfds` is readable (its process ended) or `timeout`
  // passes. The readable pidfds are put in *ready.
  void wait(const std::vector<int>& pidfds, std::chrono::milliseconds timeout,
            std::vector<int>* ready);

 private:
  int wake_fd_ = -1;
};

}  // namespace sluice::agent
