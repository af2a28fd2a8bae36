#pragma once
// Interactive pods' terminals (`sluice run --pty`, docs/cli.md "Interactive sessions"). The
// agent holds the master side of each such pod's pseudo-terminal; one thread copies what the
// pod writes there to the pod's log (where `sluice logs` and the attached CLI read it), and
// keystrokes relayed by the server (proto::TtyInput) are written to it. A pod's terminal lives
// as long as the agent that opened it: an agent restart hangs it up (the shell gets SIGHUP).
#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "proto/protocol.h"

namespace sluice::agent {

// A new pseudo-terminal of rows x cols: the master (non-blocking) and the slave, both
// O_CLOEXEC, the slave owned by uid/gid (-1: left as it is) and mode 0620. false: why.
struct PtyPair {
  int master = -1;
  int slave = -1;
};
bool open_pty(uid_t uid, gid_t gid, int rows, int cols, PtyPair* out, std::string* why);

class PtyPump {
 public:
  // Keystrokes waiting for a terminal that takes no more (its reader is busy): at most this
  // many bytes per pod; beyond, input is dropped (and said in the agent's log).
  static constexpr size_t kMaxPending = 64 << 10;

  explicit PtyPump(std::function<void(const std::string&)> log);
  ~PtyPump();  // stops the thread and closes every terminal left
  PtyPump(const PtyPump&) = delete;
  PtyPump& operator=(const PtyPump&) = delete;

  // Takes ownership of `master` (non-blocking) and `log_fd` (appending) for pod `ref`.
  void add(proto::PodRef ref, int master, int log_fd);
  // Writes keystrokes to the pod's terminal. false: unknown pod, or input dropped (full).
  bool write(proto::PodRef ref, const std::string& bytes);
  // A new window size: the pod's foreground process group gets SIGWINCH. false: unknown pod.
  bool resize(proto::PodRef ref, int rows, int cols);
  // The pod ended: what its terminal still holds goes to its log, then both are closed.
  void remove(proto::PodRef ref);

 private:
  struct Term {
    int master = -1;
    int log_fd = -1;
    bool eof = false;     // the pod's side is closed: nothing more to read
    std::string pending;  // keystrokes the terminal did not take yet
  };
  void run();
  void wake();
  void drain_locked(Term& t);  // master -> log until it would block or ends
  void flush_locked(Term& t);  // pending -> master as far as it takes it
  void close_locked(Term& t);

  std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::map<proto::PodRef, Term> terms_;
  int wake_fd_ = -1;  // eventfd: the set or a pending queue changed
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace sluice::agent
