#include "agent/exit_waiter.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace sluice::agent {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  if (pid <= 0) return -1;
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

ExitWaiter::ExitWaiter() : wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

ExitWaiter::~ExitWaiter() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ExitWaiter::wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void ExitWaiter::wait(const std::vector<int>& pidfds, std::chrono::milliseconds timeout,
                      std::vector<int>* ready) {
  std::vector<pollfd> fds;
  fds.reserve(pidfds.size() + 1);
  fds.push_back({wake_fd_, POLLIN, 0});
  for (int fd : pidfds) fds.push_back({fd, POLLIN, 0});
  const int ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 3'600'000));
  // A signal ends the wait early (EINTR): the caller ticks and sleeps again.
  if (::poll(fds.data(), fds.size(), ms) <= 0) return;
  if (fds[0].revents & POLLIN) {
    uint64_t count = 0;
    [[maybe_unused]] auto r = ::read(wake_fd_, &count, sizeof count);
  }
  for (size_t i = 1; i < fds.size(); ++i)
    if (fds[i].revents != 0) ready->push_back(fds[i].fd);
}

}  // namespace sluice::agent
