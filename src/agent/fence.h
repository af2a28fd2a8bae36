#pragma once
// Fencing (docs/agent.md, "Fencing"): a job must never run twice. The server requeues a silent
// node's jobs only after the lease (its agent timeout) + the job's grace + a margin, counted
// from the node's last sync. Before that, the pods on the node must be dead:
//
//   - a live agent that cannot reach the server stops its pods itself when its lease runs out
//     (ProcessRunner::set_lease): SIGTERM, the job's grace, SIGKILL; their exits say "fenced";
//   - a dead or frozen agent (kill -9, a crash, SIGSTOP, a stalled VM) cannot: its fencer can.
//     `sluice agent` starts one fencer process per state directory (`sluice agent-fencer`, its
//     own session, no descriptor of the agent's). It reads the lease the agent last wrote
//     (lease.json) every tick; once it has run out (plus the file's 250 ms lag while an agent
//     still holds the state directory's lock: a frozen one), it stops the pods listed in
//     pods.json the same way, and exits when no agent runs and none is left. A new agent that
//     adopts the state directory, or the frozen one when it resumes, finds them gone and
//     reports them "fenced".
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "agent/state_file.h"
#include "core/model/result.h"

namespace sluice::agent {

// The lease as the agent last wrote it: a CLOCK_MONOTONIC deadline (the fencer runs on the same
// machine). Written only when it moved by 200 ms or more: an earlier deadline is the safe side,
// and a busy node's syncs do not each cost a file write.
class LeaseFile {
 public:
  explicit LeaseFile(const std::string& state_dir) : file_(state_dir + "/lease.json") {}
  // Records the deadline (steady clock); false with *why on an I/O error.
  bool write(std::chrono::steady_clock::time_point deadline, std::string* why);
  // The recorded deadline; nullopt when none was written (no lease yet: nothing to fence).
  std::optional<std::chrono::steady_clock::time_point> read();

 private:
  StateFile file_;
  int64_t written_ns_ = 0;
};

struct FencerOptions {
  std::string state_dir;
  std::chrono::milliseconds tick{200};
  std::function<void(const std::string&)> log;  // one line each; nullptr: stderr
};

// The fencer's loop; returns when no agent runs and no pod of pods.json is alive (0), or 1 when
// another fencer already watches this state directory.
int run_fencer(const FencerOptions& options);

// Starts `exe agent-fencer --state-dir DIR` in its own session unless a fencer already runs
// there. Error text when it cannot be started.
Result<bool> spawn_fencer(const std::string& exe, const std::string& state_dir);

}  // namespace sluice::agent
