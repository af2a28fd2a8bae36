#pragma once
// ProcessRunner: starts pods as real processes and watches them until they end.
//
// Each pod runs in its own session and process group (setsid), with stdout+stderr appended to
// <state-dir>/logs/<job>-<pod>.log and its working directory <state-dir>/work/<job>-<pod>.
// One supervisor thread does everything that changes a pod. While every running pod has a
// pidfd (its children, and adopted pods once checked) it sleeps on them (an exit is seen at
// once; logs and checkpoint files are looked at every 10 ticks, deadlines kept to the
// millisecond); with pods waiting for GPUs or a pod without a pidfd it ticks every tick_ms;
// with none it sleeps until an order (runner_wait.cc). What it does:
//   start waiting pods whose GPUs are free, reap exits (waitpid, no zombies), enforce walltimes
//   and stop graces, notice checkpoint-file touches, and watch adopted pods through /proc.
// Results come back as events (started, exits, checkpoints) that the caller drains.
//
// Running pods are recorded in <state-dir>/pods.json (pid + start time from /proc, so a reused
// pid is not mistaken for the pod) so that a restarted runner adopts the pods still alive: a
// started pod is in it before its start is reported; an ended one leaves it within a second.
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/cgroup.h"
#include "agent/exit_waiter.h"
#include "agent/pod_identity.h"
#include "agent/pty_pump.h"
#include "agent/spawn.h"
#include "agent/state_file.h"
#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

// One pod to start. env is the complete environment ("KEY=VALUE"), see pod_env.h.
struct PodLaunch {
  proto::PodRef ref;
  uint64_t run = 0;  // the server's run number of this pod (proto::RunningPod); 0: unknown
  std::vector<std::string> argv;
  std::vector<std::string> env;
  std::vector<int32_t> gpus;      // device indices it needs free
  int32_t gpu_milli = 1000;       // share of each of its GPUs (< 1000: fractional)
  int64_t walltime_ms = 0;        // 0: no limit
  int64_t walltime_grace_ms = 0;  // SIGTERM at the walltime, SIGKILL this much later
  // The user it runs as (the agent is root): its work dir and log are given to it, and the
  // child drops to it before exec. nullopt: it runs as the agent.
  std::optional<PodIdentity> identity;
  // A command it runs under (the sandbox: `bwrap ... --`, wrapper[0] an absolute path); the
  // pod's resolved command and arguments follow.
  std::vector<std::string> wrapper;
  // The wrapper is the sandbox (bwrap): stop signals other than SIGKILL spare the group's
  // leader, the outer bwrap (proc.h, signal_pod_group).
  bool sandboxed = false;
  bool private_proc = false;  // ChildSetup::private_proc
  // The wrapper is a container runtime (container.h): argv goes to it as it is (its
  // executable is the image's, not looked up here; it may be empty: the image's default), and
  // `cleanup` runs once the pod's process ended.
  bool in_container = false;
  std::vector<std::string> cleanup;
  int64_t cpu_milli = 0;  // cgroup limits (RunnerOptions::cgroups); 0: none
  int64_t memory_mib = 0;
  // The job's working directory (the assignment's, where it exists on this node); "": the
  // pod's own work dir.
  std::string start_dir;
  // Files for stdout and stderr (the assignment's output_path/error_path); "": the log.
  std::string output_path;
  std::string error_path;
  // `sluice run --pty`: stdin, stdout and stderr are a pseudo-terminal (its controlling
  // terminal) whose output goes to the log (pty_pump.h); output_path/error_path do not apply.
  bool tty = false;
  // Why the pod does not start as its submitter asked (no such directory here, another user):
  // written to its log as "sluice: ..." before it starts, and added to a start failure.
  std::string note;
};

struct PodPaths {
  std::string log;
  std::string work_dir;
  std::string checkpoint_file;
  std::string gpu_use_file;  // $SLUICE_GPU_USE_FILE: the pod's simulated GPU use (fake GPUs)
};
PodPaths pod_paths(const std::string& state_dir, proto::PodRef ref);

struct RunnerOptions {
  std::string state_dir;
  int64_t tick_ms = 50;
  // While the supervisor sleeps on its pods' pidfds, an exit wakes it no sooner than this
  // after its last tick: exits close together are seen, and reported, together.
  int64_t exit_batch_ms = 50;
  // A pod waits for GPUs held by other pods at most this long (counted from the holders' kill
  // deadline when they are being stopped), then fails with "start-failed".
  int64_t gpu_wait_timeout_ms = 60'000;
  // Finished pods whose log and working directory stay on disk (for `sluice logs`): beyond
  // this many, those of the pods that finished first are removed. 0: keep every one.
  int64_t keep_finished = 1000;
  // A pod's log is cut back past this many bytes (log_cap.h); 0: no cap.
  int64_t log_max_bytes = int64_t{256} << 20;
  // RLIMIT_NPROC of a pod that runs as another user (ChildSetup::max_procs); 0: none.
  int64_t max_procs = 16384;
  // Pods' cgroups (cgroup.h); nullptr: none.
  std::shared_ptr<Cgroups> cgroups;
  // Called on the supervisor thread, without locks held, whenever new events are ready.
  std::function<void()> on_event;
  // Diagnostics (one line each); nullptr: silent.
  std::function<void(const std::string&)> log;
  // The previous agent's lease had run out before this start (fence.h): pods of pods.json
  // found dead were stopped by the fencer, and are reported "fenced" instead of "lost".
  bool previous_lease_expired = false;
};

struct RunnerEvents {
  std::vector<proto::StartedPod> started;
  std::vector<proto::PodExit> exits;
  std::vector<proto::CheckpointReport> checkpoints;
  bool empty() const { return started.empty() && exits.empty() && checkpoints.empty(); }
};

class ProcessRunner {
 public:
  // Creates the state directories, adopts the live pods listed in pods.json and starts the
  // supervisor thread.
  static Result<std::unique_ptr<ProcessRunner>> create(RunnerOptions options);
  // Stops the supervisor thread. Pods keep running (a new runner on the same state dir adopts
  // them); call stop_all + wait_idle first to end them.
  ~ProcessRunner();
  ProcessRunner(const ProcessRunner&) = delete;
  ProcessRunner& operator=(const ProcessRunner&) = delete;

  // Queues a pod: it starts on the next tick when its GPUs are free, else waits for them. The
  // outcome arrives as an event (started, or an exit with reason "start-failed"). A pod that is
  // already known (waiting or running) is left alone: returns false.
  bool launch(PodLaunch pod);
  // Sends `sig` to the pod's process group now and SIGKILL after grace_ms; the exit is reported
  // with `reason` ("stopped", "walltime"). A pod still waiting for GPUs ends at once. A pod
  // already stopping keeps the earlier kill deadline. Returns false for an unknown pod, and for
  // another run of it than `run` (0: any run): an order about an earlier run never stops a
  // later one.
  bool stop(proto::PodRef ref, int sig, int64_t grace_ms, const std::string& reason,
            const std::string& why = "", uint64_t run = 0);
  void stop_all(int sig, int64_t grace_ms, const std::string& reason);
  // Fencing (fence.h): once the steady clock passes `deadline` without a newer one, every pod
  // is stopped: SIGTERM, its own grace (the job's checkpoint grace), SIGKILL; exits "fenced".
  // A later deadline (the agent reached the server again) lets new pods run; pods already
  // being fenced still end.
  void set_lease(std::chrono::steady_clock::time_point deadline);
  // Waits until no pod is waiting or running; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout);

  // The pod saved its work (the agent's POST /v1/checkpoint). False for an unknown pod.
  bool report_checkpoint(proto::PodRef ref);
  // An interactive pod's keystrokes and (rows, cols > 0) new window size. false: no terminal
  // of that pod here (not interactive, not started, or ended), or its input was dropped.
  bool tty_input(proto::PodRef ref, const std::string& bytes, int rows, int cols);
  bool known(proto::PodRef ref) const;
  // Pods waiting (pid 0) and running, in PodRef order.
  std::vector<proto::RunningPod> running() const;
  // Takes the pending events.
  RunnerEvents take_events();
  // Blocks until some event is pending or the timeout passes, then takes them (tests).
  RunnerEvents wait_events(std::chrono::milliseconds timeout);
  // Pods adopted from pods.json at creation.
  size_t adopted() const { return adopted_; }
  const std::string& state_dir() const { return options_.state_dir; }

 private:
  struct Pod;
  explicit ProcessRunner(RunnerOptions options);
  void run();
  void run_loop();
  // runner_wait.cc: the sleep between ticks, and what wakes it.
  void wait_locked(std::unique_lock<std::mutex>& lock);
  std::optional<std::chrono::milliseconds> quiet_timeout_locked(
      std::chrono::steady_clock::time_point now);
  void wait_for_exits_locked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds timeout);
  void wake_supervisor();
  void open_adopted_pidfd(Pod& pod);
  void note_log_growth_locked(Pod& pod, int64_t size, std::chrono::steady_clock::time_point now);
  bool tick_locked(std::chrono::steady_clock::time_point now);
  static bool pod_gone(const Pod& pod, std::optional<int>* status);  // tick step 1
  static proto::PodExit exit_of(const Pod& pod, const std::optional<int>& status);
  void watch_running_locked(const proto::PodRef& ref, Pod& pod,
                            std::chrono::steady_clock::time_point now);  // tick step 2
  void start_waiting_locked(std::chrono::steady_clock::time_point now);  // tick step 3
  void start_locked(Pod& pod);
  void record_start_locked(Pod& pod, pid_t pid, std::optional<uint64_t> start_ticks);
  void finish_locked(Pod& pod, proto::PodExit exit);
  void signal_locked(Pod& pod, int sig);
  void stop_locked(Pod& pod, int sig, int64_t grace_ms, const std::string& reason,
                   const std::string& why, std::chrono::steady_clock::time_point now);
  void fence_locked(std::chrono::steady_clock::time_point now);
  void save_locked();
  void adopt_locked();
  // Pods of this state directory that pods.json does not list (it was lost or wiped while they
  // ran): found by their environment, adopted with run 0 (process_adopt.cc).
  void rescue_orphans_locked();
  // Finished pods' files: remember one, drop the oldest beyond keep_finished.
  void retire_locked(proto::PodRef ref);
  void trim_finished_locked();
  void find_finished_locked();  // at creation: logs on disk of pods not running
  void log(const std::string& line) const;

  RunnerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;        // wakes the supervisor (with waiter_: wake_supervisor())
  ExitWaiter waiter_;                 // its sleep on the pods' pidfds
  std::vector<proto::PodRef> fired_;  // pods whose pidfd woke the last sleep
  std::chrono::steady_clock::time_point last_tick_;
  std::condition_variable events_cv_;  // wakes wait_events
  std::map<proto::PodRef, std::unique_ptr<Pod>> pods_;
  std::vector<proto::PodRef> waiting_;  // arrival order
  RunnerEvents events_;
  bool dirty_ = false;  // pods.json needs a rewrite now (a pod started, or is stopping)
  // Since when pods.json still lists pods that ended (nullopt: none): written within
  // kEndedSaveDelay, or with the next start, whichever comes first. A dead pod listed is
  // harmless (a restarted agent or the fencer finds it gone by its start time; its exit, sent
  // twice, is ignored by the server for a run already ended), and writing the file for every
  // exit was half its writes at one pod start a second or more.
  std::optional<std::chrono::steady_clock::time_point> ended_since_;
  static constexpr std::chrono::milliseconds kEndedSaveDelay{1000};
  StateFile pods_file_;
  ExecutableCache executables_;  // the commands' PATH lookups (start_locked)
  bool quit_ = false;
  bool wake_ = false;
  size_t sweeping_ = 0;  // cgroup removals still to retry: the supervisor keeps ticking
  std::optional<std::chrono::steady_clock::time_point> lease_;  // fencing deadline, once known
  bool fenced_ = false;  // the pods were fenced for the current lease_
  size_t adopted_ = 0;
  // Finished pods whose files are on disk, oldest first. A pod that runs again here (same job
  // and pod) leaves the list until it finishes again; its stale entry is skipped by sequence.
  std::deque<std::pair<proto::PodRef, uint64_t>> finished_;
  std::map<proto::PodRef, uint64_t> finished_seq_;
  uint64_t next_finished_seq_ = 0;
  std::unique_ptr<PtyPump> pty_;  // made for the first interactive pod
  std::thread thread_;
};

}  // namespace sluice::agent
