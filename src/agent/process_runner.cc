// ProcessRunner: fork/exec with a CLOEXEC error pipe, reaping, stop graces, walltimes
// (pods.json and adoption after a restart: process_adopt.cc).
#include "agent/process_runner.h"

#include <spawn.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "agent/log_cap.h"
#include "agent/proc.h"
#include "agent/runner_pod.h"
#include "agent/spawn.h"

namespace sluice::agent {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// (struct ProcessRunner::Pod: runner_pod.h)

namespace {

std::string env_value(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& kv : env) {
    if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=') {
      return kv.substr(key.size() + 1);
    }
  }
  return {};
}

std::string exit_message(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by " + signal_name(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

PodPaths pod_paths(const std::string& state_dir, proto::PodRef ref) {
  const std::string name = std::to_string(ref.job) + "-" + std::to_string(ref.pod);
  return {state_dir + "/logs/" + name + ".log", state_dir + "/work/" + name,
          state_dir + "/work/" + name + "/.sluice-checkpoint",
          state_dir + "/work/" + name + "/.sluice-gpu-use"};
}

ProcessRunner::ProcessRunner(RunnerOptions options)
    : options_(std::move(options)), pods_file_(options_.state_dir + "/pods.json") {}

Result<std::unique_ptr<ProcessRunner>> ProcessRunner::create(RunnerOptions options) {
  if (options.state_dir.empty()) return Error{"process runner: empty state directory"};
  if (options.tick_ms <= 0) options.tick_ms = 50;
  std::error_code ec;
  for (const char* sub : {"logs", "work"}) {
    const fs::path dir = fs::path(options.state_dir) / sub;
    fs::create_directories(dir, ec);
    // Searchable, not listable or writable: a pod reaches its own log and work dir by name
    // (both its own, 0600/0700) and cannot list or replace the others'.
    if (!ec)
      fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                      ec);
    if (ec) return Error{"cannot create " + dir.string() + ": " + ec.message()};
  }
  std::unique_ptr<ProcessRunner> r(new ProcessRunner(std::move(options)));
  {
    std::lock_guard lock(r->mu_);
    r->adopt_locked();
    r->rescue_orphans_locked();
    r->find_finished_locked();
  }
  r->thread_ = std::thread([p = r.get()] { p->run(); });
  return r;
}

ProcessRunner::~ProcessRunner() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
    if (dirty_ || ended_since_) save_locked();
  }
  wake_supervisor();
  if (thread_.joinable()) thread_.join();
}

void ProcessRunner::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

bool ProcessRunner::launch(PodLaunch spec) {
  {
    std::lock_guard lock(mu_);
    if (pods_.count(spec.ref)) return false;
    finished_seq_.erase(spec.ref);  // runs again: its files are in use
    auto pod = std::make_unique<Pod>();
    pod->paths = pod_paths(options_.state_dir, spec.ref);
    pod->queued = Clock::now();
    pod->spec = std::move(spec);
    waiting_.push_back(pod->spec.ref);
    pods_.emplace(pod->spec.ref, std::move(pod));
    wake_ = true;
  }
  wake_supervisor();
  return true;
}

bool ProcessRunner::stop(proto::PodRef ref, int sig, int64_t grace_ms, const std::string& reason,
                         const std::string& why, uint64_t run) {
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    auto it = pods_.find(ref);
    if (it == pods_.end()) return false;
    if (run != 0 && it->second->spec.run != 0 && run != it->second->spec.run) return false;
    notify = !it->second->running;  // a waiting pod ends at once: an event
    stop_locked(*it->second, sig, grace_ms, reason, why, Clock::now());
  }
  if (notify) {
    events_cv_.notify_all();
    if (options_.on_event) options_.on_event();
  }
  wake_supervisor();
  return true;
}

void ProcessRunner::stop_locked(Pod& pod, int sig, int64_t grace_ms, const std::string& reason,
                                const std::string& why, Clock::time_point now) {
  if (!pod.running) {
    // Never started: it simply ends.
    proto::PodExit exit;
    exit.job = pod.spec.ref.job;
    exit.pod = pod.spec.ref.pod;
    exit.reason = reason;
    exit.message = "ended before it started" + (why.empty() ? "" : " (" + why + ")");
    finish_locked(pod, std::move(exit));
    return;
  }
  const auto deadline = now + milliseconds(std::max<int64_t>(grace_ms, 0));
  if (!pod.stopping) {
    pod.stopping = true;
    pod.exit_reason = reason;
    pod.stop_why = why;
    pod.kill_deadline = deadline;
  } else {
    pod.kill_deadline = std::min(pod.kill_deadline, deadline);
  }
  signal_locked(pod, sig);
  if (sig == SIGKILL) pod.killed = true;
  dirty_ = true;
  wake_ = true;
}

void ProcessRunner::set_lease(Clock::time_point deadline) {
  std::lock_guard lock(mu_);
  if (lease_ && deadline <= *lease_) return;
  // The old lease ran out before this renewal (the agent was frozen, or its syncs failed, past
  // it): its pods are fenced all the same, before the new lease is taken. The fencer may be
  // stopping them already, and the server requeues their jobs; their exits must say "fenced".
  const auto now = Clock::now();
  if (lease_ && now >= *lease_ && !fenced_) fence_locked(now);
  // The first lease, or one after a fencing: a supervisor asleep on its pods' pidfds does not
  // know its deadline yet (renewals only move a known one later, which an early wake-up reads).
  const bool news = !lease_ || fenced_;
  lease_ = deadline;
  if (deadline > Clock::now()) fenced_ = false;
  if (news) {
    wake_ = true;
    wake_supervisor();
  }
}

// The lease ran out: stop everything, each pod with its own grace. Pods already stopping on a
// server order keep their reason (the server knows about them) and their earlier deadline.
void ProcessRunner::fence_locked(Clock::time_point now) {
  fenced_ = true;
  std::vector<Pod*> pods;
  for (auto& [ref, pod] : pods_) pods.push_back(pod.get());
  if (pods.empty()) return;
  log("lease expired: no successful sync with the server for the lease period; stopping " +
      std::to_string(pods.size()) + " pod(s) so that they cannot run twice (fencing)");
  for (Pod* pod : pods)
    if (!pod->stopping)
      stop_locked(*pod, SIGTERM, pod->spec.walltime_grace_ms, "fenced",
                  "the agent lost the server for its lease", now);
}

void ProcessRunner::stop_all(int sig, int64_t grace_ms, const std::string& reason) {
  std::vector<proto::PodRef> refs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [ref, pod] : pods_) refs.push_back(ref);
  }
  for (const auto& ref : refs) stop(ref, sig, grace_ms, reason, "agent drain");
}

bool ProcessRunner::wait_idle(milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  std::unique_lock lock(mu_);
  while (!pods_.empty()) {
    if (events_cv_.wait_until(lock, until) == std::cv_status::timeout && !pods_.empty()) {
      return false;
    }
  }
  return true;
}

bool ProcessRunner::report_checkpoint(proto::PodRef ref) {
  {
    std::lock_guard lock(mu_);
    auto it = pods_.find(ref);
    if (it == pods_.end() || !it->second->running) return false;
    events_.checkpoints.push_back({ref.job, ref.pod, unix_now_ns(), it->second->spec.run});
  }
  events_cv_.notify_all();
  if (options_.on_event) options_.on_event();
  return true;
}

bool ProcessRunner::tty_input(proto::PodRef ref, const std::string& bytes, int rows, int cols) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(ref);
  if (!pty_ || it == pods_.end() || !it->second->running || !it->second->spec.tty) return false;
  bool ok = true;
  if (rows > 0 && cols > 0) ok = pty_->resize(ref, rows, cols);
  if (!bytes.empty()) ok = pty_->write(ref, bytes) && ok;
  return ok;
}

bool ProcessRunner::known(proto::PodRef ref) const {
  std::lock_guard lock(mu_);
  return pods_.count(ref) > 0;
}

std::vector<proto::RunningPod> ProcessRunner::running() const {
  std::lock_guard lock(mu_);
  std::vector<proto::RunningPod> out;
  out.reserve(pods_.size());
  for (const auto& [ref, pod] : pods_) {
    out.push_back(
        {ref.job, ref.pod, pod->running ? int64_t{pod->pid} : 0, pod->stopping, pod->spec.run});
  }
  return out;
}

RunnerEvents ProcessRunner::take_events() {
  std::lock_guard lock(mu_);
  return std::exchange(events_, {});
}

RunnerEvents ProcessRunner::wait_events(milliseconds timeout) {
  std::unique_lock lock(mu_);
  events_cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  return std::exchange(events_, {});
}

// The runner's thread reaps, signals and kills pods: it must outlive any one fault. An
// exception (a filesystem error in a path that does not expect one, say) is logged and the
// loop goes on after a pause.
void ProcessRunner::run() {
  for (;;) {
    try {
      run_loop();  // returns once quit_ is set
      return;
    } catch (const std::exception& e) {
      log(std::string("internal error in the process runner: ") + e.what());
      std::this_thread::sleep_for(milliseconds(options_.tick_ms));
    }
  }
}

void ProcessRunner::run_loop() {
  std::unique_lock lock(mu_);
  while (!quit_) {
    last_tick_ = Clock::now();
    const bool fresh = tick_locked(last_tick_);
    if (dirty_ || (ended_since_ && Clock::now() >= *ended_since_ + kEndedSaveDelay)) save_locked();
    if (fresh) {
      lock.unlock();
      events_cv_.notify_all();
      if (options_.on_event) options_.on_event();
      lock.lock();
      continue;  // re-check at once: the callback may have queued work
    }
    wait_locked(lock);
  }
}

void ProcessRunner::signal_locked(Pod& pod, int sig) {
  if (!pod.running || pod.pid <= 0) return;
  // The whole group: a shell's children die with it. The leader is never reaped before this
  // (exits are detected with WNOWAIT), so the pid cannot have been reused.
  signal_pod_group(pod.pid, sig, pod.spec.sandboxed);
}

namespace {
// A command whose outcome nobody waits for (a container's removal): started and reaped by a
// thread of its own, its output discarded.
void run_detached(std::vector<std::string> argv) {
  std::thread([argv = std::move(argv)] {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    if (::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
    posix_spawn_file_actions_destroy(&fa);
  }).detach();
}
}  // namespace

void ProcessRunner::finish_locked(Pod& pod, proto::PodExit exit) {
  const proto::PodRef ref = pod.spec.ref;
  // An interactive pod's last output reaches its log before its exit is reported.
  if (pty_) pty_->remove(ref);
  exit.job = ref.job;
  exit.pod = ref.pod;
  exit.run = pod.spec.run;
  if (pod.log_dropped > 0)
    exit.message += (exit.message.empty() ? "" : "; ") + std::string("its log passed the cap of ") +
                    std::to_string(options_.log_max_bytes) +
                    " bytes: " + std::to_string(pod.log_dropped) + " bytes were dropped";
  if (exit.at_unix_ns == 0) exit.at_unix_ns = unix_now_ns();
  log("pod " + std::to_string(ref.job) + "/" + std::to_string(ref.pod) + " ended: " + exit.reason +
      (exit.message.empty() ? "" : " (" + exit.message + ")"));
  events_.exits.push_back(std::move(exit));
  if (!pod.spec.cleanup.empty()) run_detached(pod.spec.cleanup);
  if (options_.cgroups) options_.cgroups->release(ref);
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), ref), waiting_.end());
  // Only a pod that ran is in pods.json; it may stay listed a little longer (ended_since_).
  if (pod.running && !ended_since_) ended_since_ = Clock::now();
  pods_.erase(ref);
  retire_locked(ref);
}

void ProcessRunner::retire_locked(proto::PodRef ref) {
  if (options_.keep_finished <= 0) return;
  const uint64_t seq = next_finished_seq_++;
  finished_seq_[ref] = seq;
  finished_.emplace_back(ref, seq);
  trim_finished_locked();
}

void ProcessRunner::trim_finished_locked() {
  while (static_cast<int64_t>(finished_seq_.size()) > options_.keep_finished &&
         !finished_.empty()) {
    const auto [ref, seq] = finished_.front();
    finished_.pop_front();
    auto it = finished_seq_.find(ref);
    if (it == finished_seq_.end() || it->second != seq) continue;  // ran again since
    finished_seq_.erase(it);
    const PodPaths paths = pod_paths(options_.state_dir, ref);
    std::error_code ec;
    fs::remove(paths.log, ec);
    if (ec) log("cannot remove " + paths.log + ": " + ec.message());
    fs::remove_all(paths.work_dir, ec);
    if (ec) log("cannot remove " + paths.work_dir + ": " + ec.message());
  }
}

namespace {
// A finished pod's files as an older agent left them (log 0644, work dir 0755): closed, since
// pods of other users may now run here.
void tighten_finished(const PodPaths& paths) {
  std::error_code ec;
  if (fs::is_symlink(paths.log, ec)) return;
  fs::permissions(paths.log, fs::perms::owner_read | fs::perms::owner_write, ec);
  if (!fs::is_symlink(paths.work_dir, ec))
    fs::permissions(paths.work_dir, fs::perms::owner_all, ec);
}
}  // namespace

// The logs of pods that finished before this runner started (not adopted as running), oldest
// first by modification time, so that keep_finished holds across restarts.
void ProcessRunner::find_finished_locked() {
  if (options_.keep_finished <= 0) return;
  std::vector<std::tuple<fs::file_time_type, proto::PodRef>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(options_.state_dir) / "logs", ec)) {
    const std::string name = e.path().filename().string();
    unsigned long long job = 0;
    int pod = 0;
    int used = 0;
    if (std::sscanf(name.c_str(), "%llu-%d.log%n", &job, &pod, &used) != 2 ||
        static_cast<size_t>(used) != name.size())
      continue;
    const proto::PodRef ref{static_cast<uint64_t>(job), pod};
    if (pods_.count(ref)) continue;
    tighten_finished(pod_paths(options_.state_dir, ref));
    std::error_code tec;
    const auto t = e.last_write_time(tec);
    if (!tec) found.emplace_back(t, ref);
  }
  std::sort(found.begin(), found.end());
  for (const auto& [t, ref] : found) {
    const uint64_t seq = next_finished_seq_++;
    finished_seq_[ref] = seq;
    finished_.emplace_back(ref, seq);
  }
  trim_finished_locked();
}

// Whether a running pod's process has ended; *status: how, when it can be known (a child's
// wait status; an adopted pod's only when it is still this process's child).
bool ProcessRunner::pod_gone(const Pod& pod, std::optional<int>* status) {
  bool gone = false;
  if (pod.child) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(pod.pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && info.si_pid == pod.pid) {
      ::kill(-pod.pid, SIGKILL);  // stragglers of the group (background children)
      int st = 0;
      if (::waitpid(pod.pid, &st, 0) == pod.pid) *status = st;
      gone = true;
    } else if (rc != 0 && errno == ECHILD) {
      // Someone else reaped it (should not happen): status unknown. Only when waitid failed:
      // a running child leaves errno as it was, and an ECHILD left by an adopted pod's
      // waitpid made live pods "gone" after an agent restart (tests/chaos, seeds 32, 40, ...).
      gone = true;
    }
  } else {
    auto st = read_proc_stat(pod.pid);
    if (!st || st->start_ticks != pod.start_ticks || st->state == 'Z' || st->state == 'X') {
      gone = true;
      int raw = 0;
      // A pod adopted inside the same process (tests, `sluice up`) is still our child.
      if (st && st->start_ticks == pod.start_ticks &&
          ::waitpid(pod.pid, &raw, WNOHANG) == pod.pid) {
        *status = raw;
      }
      // Its background processes end with it, as a child pod's do.
      kill_group_remnants(pod.pid, pod.start_ticks);
    }
  }
  return gone;
}

// The exit report of a pod that ended with `status` (none: unknown).
proto::PodExit ProcessRunner::exit_of(const Pod& pod, const std::optional<int>& status) {
  proto::PodExit exit;
  if (status) {
    if (WIFEXITED(*status)) {
      exit.exit_code = WEXITSTATUS(*status);
      exit.reason = "exited";
    } else if (WIFSIGNALED(*status)) {
      exit.signal = WTERMSIG(*status);
      exit.exit_code = 128 + exit.signal;  // the shell's convention
      exit.reason = "signaled";
    }
    exit.message = exit_message(*status);
  } else {
    exit.exit_code = -1;
    exit.reason = "lost";
    exit.message = "exit status unknown (the process was adopted after an agent restart)";
  }
  if (pod.stopping) {
    exit.message = exit.message + "; " +
                   (pod.exit_reason == "walltime" ? "walltime exceeded" : "stop order") +
                   (pod.stop_why.empty() ? "" : " (" + pod.stop_why + ")") +
                   (pod.killed ? ", SIGKILL after grace" : "");
    exit.reason = pod.exit_reason;
  }
  return exit;
}

// Runs in the supervisor thread. Returns true when new events are pending.
bool ProcessRunner::tick_locked(Clock::time_point now) {
  const size_t before = events_.started.size() + events_.exits.size() + events_.checkpoints.size();
  if (lease_ && now >= *lease_ && !fenced_) fence_locked(now);
  // 1. Exits of running pods (children: waitid WNOWAIT first, so the group can be killed while
  //    the zombie still holds the pid; adopted: /proc).
  std::vector<proto::PodRef> refs;
  for (const auto& [ref, pod] : pods_) {
    if (pod->running) refs.push_back(ref);
  }
  for (const auto& ref : refs) {
    Pod& pod = *pods_.at(ref);
    std::optional<int> status;
    if (pod_gone(pod, &status)) finish_locked(pod, exit_of(pod, status));
  }
  if (options_.cgroups) {
    std::vector<std::string> stuck;
    sweeping_ = options_.cgroups->sweep(&stuck);
    for (const auto& d : stuck) log("cannot remove cgroup " + d + ": still busy; left in place");
  }
  // 2. Walltimes, kill deadlines, checkpoint files.
  for (auto& [ref, podp] : pods_)
    if (podp->running) watch_running_locked(ref, *podp, now);
  // 3. Waiting pods, in arrival order, when their GPUs have room.
  start_waiting_locked(now);
  return events_.started.size() + events_.exits.size() + events_.checkpoints.size() != before;
}

// Step 2 of a tick for a running pod: its walltime, its kill deadline, its log's cap and its
// checkpoint file.
void ProcessRunner::watch_running_locked(const proto::PodRef& ref, Pod& pod,
                                         Clock::time_point now) {
  if (!pod.stopping && pod.walltime_deadline && now >= *pod.walltime_deadline) {
    pod.stopping = true;
    pod.exit_reason = "walltime";
    pod.stop_why = "walltime " + std::to_string(pod.spec.walltime_ms) + " ms";
    pod.kill_deadline = now + milliseconds(std::max<int64_t>(pod.spec.walltime_grace_ms, 0));
    signal_locked(pod, SIGTERM);
    dirty_ = true;
  }
  if (pod.stopping && !pod.killed && now >= pod.kill_deadline) {
    signal_locked(pod, SIGKILL);
    pod.killed = true;
  }
  int64_t size = 0;
  const int64_t cut = cap_log(pod.paths.log, options_.log_max_bytes, &size);
  note_log_growth_locked(pod, size + cut, now);
  if (cut > 0) {
    if (pod.log_dropped == 0)
      log("pod " + std::to_string(ref.job) + "/" + std::to_string(ref.pod) +
          ": its log passed the cap of " + std::to_string(options_.log_max_bytes) +
          " bytes; cut back to its first half");
    pod.log_dropped += cut;
  }
  const int64_t m = mtime_ns(pod.paths.checkpoint_file);
  if (m != 0 && m != pod.checkpoint_mtime_ns) {
    events_.checkpoints.push_back({ref.job, ref.pod, m, pod.spec.run});
  }
  pod.checkpoint_mtime_ns = m;
}

// Step 3 of a tick: waiting pods, in arrival order, start when their GPUs have room; one that
// waited past gpu_wait_timeout_ms fails.
void ProcessRunner::start_waiting_locked(Clock::time_point now) {
  std::map<int32_t, int32_t> used_milli;
  std::map<int32_t, const Pod*> holder;
  for (const auto& [ref, pod] : pods_) {
    if (!pod->running) continue;
    for (int32_t g : pod->spec.gpus) {
      used_milli[g] += pod->spec.gpu_milli;
      holder[g] = pod.get();
    }
  }
  const std::vector<proto::PodRef> queue = waiting_;
  for (const auto& ref : queue) {
    Pod& pod = *pods_.at(ref);
    bool fits = true;
    std::optional<Clock::time_point> wait_until =
        pod.queued + milliseconds(options_.gpu_wait_timeout_ms);
    std::string busy;
    for (int32_t g : pod.spec.gpus) {
      if (used_milli[g] + pod.spec.gpu_milli > 1000) {
        fits = false;
        const Pod* h = holder[g];
        busy += (busy.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(g) + " (job " +
                std::to_string(h->spec.ref.job) + " pod " + std::to_string(h->spec.ref.pod) +
                (h->stopping ? ", stopping)" : ")");
        if (h->stopping) {
          wait_until =
              std::max(*wait_until, h->kill_deadline + milliseconds(options_.gpu_wait_timeout_ms));
        }
      }
    }
    if (fits) {
      for (int32_t g : pod.spec.gpus) used_milli[g] += pod.spec.gpu_milli;
      waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), ref), waiting_.end());
      start_locked(pod);  // a pod that cannot start is finished and erased: look it up again
      auto it = pods_.find(ref);
      if (it != pods_.end() && it->second->running) {
        for (int32_t g : it->second->spec.gpus) holder[g] = it->second.get();
      }
    } else if (now >= *wait_until) {
      proto::PodExit exit;
      exit.reason = "start-failed";
      exit.exit_code = -1;
      exit.message = "GPUs still in use after waiting: " + busy;
      finish_locked(pod, std::move(exit));
    }
  }
}

namespace {

const std::string kPtyName = "the pod's pseudo-terminal";

// Descriptors of one launch, closed however it ends (not `null`: dev_null()'s).
struct LaunchFds {
  int log = -1, null = -1, cgroup = -1;
  PtyPair tty;  // an interactive pod's terminal
  ~LaunchFds() {
    for (int fd : {log, cgroup, tty.master, tty.slave})
      if (fd >= 0) ::close(fd);
  }
};

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The argv to exec and the file it runs: the sandbox's `bwrap ... --` first, if any; a
// container's command is the image's (the runtime resolves it). An error for a command that is
// empty or not found.
std::string command_line(const PodLaunch& spec, ExecutableCache& executables,
                         std::vector<std::string>* args, std::string* exe) {
  *args = spec.wrapper;
  if (spec.in_container) {
    args->insert(args->end(), spec.argv.begin(), spec.argv.end());
    *exe = spec.wrapper.front();
    return {};
  }
  if (spec.argv.empty() || spec.argv[0].empty()) return "empty command";
  const std::string search = env_value(spec.env, "PATH");
  auto path = executables.find(spec.argv[0], search, ExecutableCache::Clock::now());
  if (!path) return "command not found: " + spec.argv[0] + " (PATH=" + search + ")";
  args->push_back(spec.wrapper.empty() ? spec.argv[0] : *path);
  args->insert(args->end(), spec.argv.begin() + 1, spec.argv.end());
  *exe = spec.wrapper.empty() ? *path : spec.wrapper.front();
  return {};
}

// What the child does between vfork() and exec (spawn.h): its files, its directory and, for a
// pod with a user of its own, that user. Points into its arguments, which must outlive it.
ChildSetup child_setup(const PodLaunch& spec, const std::string& work_dir, const LaunchFds& fds,
                       const std::string& exe, std::vector<char*>& argv, std::vector<char*>& envp,
                       int64_t max_procs) {
  // Only kernels before 5.9 (no close_range) use it: read once, not a getrlimit per pod.
  static const long max_fd = std::min<long>(::sysconf(_SC_OPEN_MAX), 65536);
  ChildSetup setup{exe.c_str(), argv.data(), envp.data(), work_dir.c_str(),
                   fds.null,    fds.log,     max_fd};
  setup.cgroup_fd = fds.cgroup;
  if (!spec.start_dir.empty()) setup.start_dir = spec.start_dir.c_str();
  if (spec.tty) {  // the terminal is its stdin, stdout and stderr (the pump copies it to the log)
    setup.tty_fd = setup.null_fd = setup.log_fd = fds.tty.slave;
  } else {
    if (!spec.output_path.empty()) setup.out_path = spec.output_path.c_str();
    if (!spec.error_path.empty()) setup.err_path = spec.error_path.c_str();
    setup.out_append = spec.ref.pod > 0;
  }
  if (spec.identity) {
    setup.drop = true;
    setup.uid = spec.identity->uid;
    setup.gid = spec.identity->gid;
    setup.max_procs = static_cast<long>(max_procs);
    setup.private_proc = spec.private_proc;
  }
  return setup;
}

// Why the child did not exec: its stage, what it worked on (`what` for the stages that name
// no path of the spec), the error.
std::string child_error_text(const ChildError& ce, const PodLaunch& spec, const std::string& what) {
  const std::string& object = ce.stage == 7    ? spec.start_dir
                              : ce.stage == 8  ? spec.output_path
                              : ce.stage == 9  ? spec.error_path
                              : ce.stage == 10 ? kPtyName
                                               : what;
  // The job's directory is entered as the pod's user: say which, and what to do instead.
  const std::string hint = ce.stage != 7 ? ""
                           : spec.identity
                               ? " (as uid " + std::to_string(spec.identity->uid) +
                                     "; run from, or give --chdir, a directory that user may enter)"
                               : " (give --chdir a directory that exists on the node)";
  return std::string("cannot ") + child_stage_name(ce.stage) + object + ": " +
         std::strerror(ce.err) + hint;
}

}  // namespace

// Starts one pod: vfork, and in the child setsid + cgroup + chdir + redirect + drop privileges
// + exec. exec failures come back through a CLOEXEC pipe (EOF means exec succeeded). Erases the
// pod on failure.
void ProcessRunner::start_locked(Pod& pod) {
  const PodLaunch& spec = pod.spec;
  auto fail = [&](const std::string& msg) {
    proto::PodExit exit;
    exit.reason = "start-failed";
    exit.exit_code = -1;
    exit.message = spec.note.empty() ? msg : msg + " (" + spec.note + ")";
    finish_locked(pod, std::move(exit));
  };
  // 1. Everything the child needs is prepared here: after vfork() only system calls.
  std::vector<std::string> args;
  std::string exe;
  if (std::string bad = command_line(spec, executables_, &args, &exe); !bad.empty())
    return fail(bad);
  LaunchFds fds;
  std::string why;
  fds.log = open_pod_files({pod.paths.work_dir, pod.paths.log}, spec.identity, &why);
  if (fds.log < 0) return fail(why);
  if (!spec.note.empty()) {
    const std::string line = "sluice: " + spec.note + "\n";
    [[maybe_unused]] auto n = ::write(fds.log, line.data(), line.size());
  }
  if (options_.cgroups) {
    auto cg = options_.cgroups->prepare(spec.ref, spec.cpu_milli, spec.memory_mib);
    if (!cg) return fail(cg.error());
    fds.cgroup = *cg;
  }
  fds.null = dev_null();
  if (spec.tty) {
    const uid_t uid = spec.identity ? spec.identity->uid : static_cast<uid_t>(-1);
    const gid_t gid = spec.identity ? spec.identity->gid : static_cast<gid_t>(-1);
    if (!open_pty(uid, gid, 24, 80, &fds.tty, &why)) return fail(why);
  }
  if (fds.null < 0) return fail(std::string("cannot open /dev/null: ") + std::strerror(errno));
  std::vector<char*> argv = c_strings(args);
  std::vector<char*> envp = c_strings(spec.env);
  pod.checkpoint_mtime_ns = mtime_ns(pod.paths.checkpoint_file);

  const ChildSetup setup =
      child_setup(spec, pod.paths.work_dir, fds, exe, argv, envp, options_.max_procs);
  ChildError ce{};
  StartWindow window;
  window.before_ns = boottime_ns();
  const pid_t pid = spawn_child(setup, &ce);
  window.after_ns = boottime_ns();
  if (pid < 0) return fail(std::string("vfork: ") + std::strerror(errno));
  // 2. A ChildError: the exec did not happen, and the child has _exit'ed.
  if (ce.stage != 0) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    const std::string what =
        ce.stage == 1   ? pod.paths.work_dir
        : ce.stage == 5 ? "uid " + std::to_string(setup.uid) + " gid " + std::to_string(setup.gid)
        : ce.stage == 6 ? options_.cgroups->dir(spec.ref)
                        : exe;
    return fail(child_error_text(ce, spec, what));
  }
  if (spec.tty) {
    // The pod holds its side now; the master and a log descriptor go to the pump.
    ::close(std::exchange(fds.tty.slave, -1));
    const int log_fd = ::fcntl(fds.log, F_DUPFD_CLOEXEC, 0);
    if (!pty_) pty_ = std::make_unique<PtyPump>(options_.log);
    if (log_fd >= 0) {
      pty_->add(spec.ref, std::exchange(fds.tty.master, -1), log_fd);
    } else {  // the pod runs on, unseen; closing the master hangs it up
      log("pod " + std::to_string(spec.ref.job) + "/" + std::to_string(spec.ref.pod) +
          ": cannot keep its log open for its terminal: " + std::strerror(errno));
    }
  }
  record_start_locked(pod, pid, start_ticks_within(window));
}

// The pod runs as `pid`: its state, its walltime deadline, the started event.
// start_ticks: the child's start time when its spawn told it (else /proc is read).
void ProcessRunner::record_start_locked(Pod& pod, pid_t pid, std::optional<uint64_t> start_ticks) {
  const PodLaunch& spec = pod.spec;
  pod.running = true;
  pod.child = true;
  pod.pid = pid;
  pod.started_unix_ns = unix_now_ns();
  if (!start_ticks)
    if (auto st = read_proc_stat(pid)) start_ticks = st->start_ticks;
  if (start_ticks) pod.start_ticks = *start_ticks;
  // Our child, not reaped before its exit is seen: the pid names it until then.
  if (waiter_.usable()) pod.pidfd = open_pidfd(pid);
  if (spec.walltime_ms > 0) pod.walltime_deadline = Clock::now() + milliseconds(spec.walltime_ms);
  events_.started.push_back({spec.ref.job, spec.ref.pod, spec.run});
  dirty_ = true;
  log("pod " + std::to_string(spec.ref.job) + "/" + std::to_string(spec.ref.pod) +
      " started: pid " + std::to_string(pid) +
      (spec.identity ? " as uid " + std::to_string(spec.identity->uid) : std::string()));
}

}  // namespace sluice::agent
