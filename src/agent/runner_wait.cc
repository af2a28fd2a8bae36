// The process runner's sleep between two ticks (ProcessRunner::run_loop): on its pods' pidfds
// while every running pod has one (an exit seen exit_batch_ms after the last tick at the
// earliest), else every tick_ms while it has pods, else until an order, a stop, the end or
// the lease's deadline.
#include <algorithm>

#include "agent/runner_pod.h"

namespace sluice::agent {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {
// While the supervisor sleeps on pidfds it still looks at the running pods' logs (their cap)
// and checkpoint files, every this many ticks.
constexpr int64_t kWatchTicks = 10;

milliseconds until(Clock::time_point now, Clock::time_point t) {
  return std::chrono::ceil<milliseconds>(std::max(t - now, Clock::duration::zero()));
}
}  // namespace

void ProcessRunner::wake_supervisor() {
  cv_.notify_all();
  waiter_.wake();
}

void ProcessRunner::wait_locked(std::unique_lock<std::mutex>& lock) {
  const auto woken = [&] { return quit_ || wake_; };
  if (!pods_.empty() || sweeping_ > 0 || dirty_) {  // dirty_: pods.json could not be written
    if (const auto quiet = quiet_timeout_locked(Clock::now()); quiet && !woken())
      wait_for_exits_locked(lock, *quiet);
    else
      cv_.wait_for(lock, milliseconds(options_.tick_ms), woken);
  } else if (ended_since_) {  // pods.json lists pods that ended: rewritten at the delay's end
    cv_.wait_until(lock,
                   lease_ && !fenced_ ? std::min(*lease_, *ended_since_ + kEndedSaveDelay)
                                      : *ended_since_ + kEndedSaveDelay,
                   woken);
  } else if (lease_ && !fenced_) {
    // Nothing to watch (no pod, no cgroup to remove, pods.json written): asleep until an order,
    // a stop, the end or the lease's deadline (renewals move it on: one wake-up per lease at
    // most) instead of every tick_ms: 64 idle agents of one process woke 1,280 times a second.
    cv_.wait_until(lock, *lease_, woken);
  } else {
    cv_.wait(lock, woken);
  }
  wake_ = false;
}

// A log that grew by more than 1/64 of its cap (at least 1 MiB) at a rate that would reach it
// in kWatchTicks ticks keeps the supervisor ticking: between two looks the log passes its cap
// by no more than a tick's worth of output, as before the supervisor slept on pidfds.
// `size`: the log's size before any cut.
void ProcessRunner::note_log_growth_locked(Pod& pod, int64_t size, Clock::time_point now) {
  const int64_t cap = options_.log_max_bytes;
  if (cap > 0 && pod.log_seen != Clock::time_point{}) {
    const int64_t slack = std::max<int64_t>(cap / 64, int64_t{1} << 20);
    const auto watch = milliseconds(options_.tick_ms * kWatchTicks);
    const auto since = std::max(now - pod.log_seen, Clock::duration(1));
    const double grew = static_cast<double>(std::max<int64_t>(size - pod.log_size, 0));
    pod.log_fast =
        grew * static_cast<double>(watch.count()) >
        static_cast<double>(slack) * std::chrono::duration<double, std::milli>(since).count();
  }
  pod.log_size = cap > 0 && size > cap ? cap / 2 : size;  // after a cut: its kept head
  pod.log_seen = now;
}

// An adopted pod (pods.json, or found by its environment: not necessarily our child) gets a
// pidfd too: opened, then the process's start time checked again, so that a pid reused by
// another process since the pod was found is never watched in its place (the tick's /proc
// check then finds the pod gone).
void ProcessRunner::open_adopted_pidfd(Pod& pod) {
  if (!waiter_.usable()) return;
  const int fd = open_pidfd(pod.pid);
  if (fd < 0) return;
  const auto st = read_proc_stat(pod.pid);
  if (!st || st->start_ticks != pod.start_ticks) {
    ::close(fd);
    return;
  }
  pod.pidfd = fd;
}

// How long the supervisor may sleep on its running pods' pidfds; nullopt where it must tick:
// without an eventfd, with pods waiting for GPUs, cgroups to remove again, pods.json to write
// again, a running pod without a pidfd, or one whose log grows fast. The sleep ends at the first
// walltime, kill or lease deadline, when pods.json is due, and after kWatchTicks ticks at most.
std::optional<milliseconds> ProcessRunner::quiet_timeout_locked(Clock::time_point now) {
  // A pidfd that woke the supervisor while its pod runs on (not an exit the tick saw: a
  // process that is not our child, say) is dropped: that pod is watched by ticks from now on,
  // and the sleep cannot turn into a busy loop.
  for (const auto& ref : std::exchange(fired_, {})) {
    auto it = pods_.find(ref);
    if (it != pods_.end() && it->second->running && it->second->pidfd >= 0) {
      ::close(std::exchange(it->second->pidfd, -1));
    }
  }
  if (!waiter_.usable() || !waiting_.empty() || sweeping_ > 0 || dirty_) return std::nullopt;
  auto t = now + milliseconds(options_.tick_ms * kWatchTicks);
  for (const auto& [ref, pod] : pods_) {
    if (!pod->running || pod->pidfd < 0 || pod->log_fast) return std::nullopt;
    if (pod->stopping && !pod->killed) t = std::min(t, pod->kill_deadline);
    if (!pod->stopping && pod->walltime_deadline) t = std::min(t, *pod->walltime_deadline);
  }
  if (lease_ && !fenced_) t = std::min(t, *lease_);
  if (ended_since_) t = std::min(t, *ended_since_ + kEndedSaveDelay);
  return until(now, t);
}

// Only the supervisor thread ends running pods (and closes their pidfds), so the descriptors
// stay valid while the lock is released for the poll. An exit wakes the supervisor no sooner
// than exit_batch_ms after its last tick (an order still does at once): exits close together
// are seen in one tick and reported in one sync, as with a tick every 50 ms (without that, 64
// agents running `true` made 1.1x the system calls per job), while a pod that ends after a
// quiet spell is seen at once.
void ProcessRunner::wait_for_exits_locked(std::unique_lock<std::mutex>& lock,
                                          milliseconds timeout) {
  std::vector<int> fds;
  std::vector<proto::PodRef> refs;
  for (const auto& [ref, pod] : pods_) {
    fds.push_back(pod->pidfd);
    refs.push_back(ref);
  }
  std::vector<int> ready;
  lock.unlock();
  waiter_.wait(fds, timeout, &ready);
  lock.lock();
  for (int fd : ready) {
    const auto at = std::find(fds.begin(), fds.end(), fd) - fds.begin();
    fired_.push_back(refs[static_cast<size_t>(at)]);
  }
  if (!ready.empty())
    cv_.wait_until(lock, last_tick_ + milliseconds(options_.exit_batch_ms),
                   [&] { return quit_ || wake_; });
}

}  // namespace sluice::agent
