#pragma once
// The durable store, as the server sees it: job records, meta keys (configuration, budgets, id
// counter, node credentials) and the job event log, written through one writer thread.
//
// Writers enqueue a Write and wait for its ticket; the writer thread takes everything queued,
// commits it as one transaction (SqliteStore: one fsync; EtcdStore: one etcd txn, or a few when
// etcd's request limits demand it), then wakes the waiters: group commit, so many concurrent
// submissions share a commit and each is durable before it is acknowledged.
// Reads happen once, at startup, before the writer starts; afterwards the server serves reads
// from memory. The backends are sqlite_store.h (one machine, the default) and etcd_store.h
// (replicated, with leader election: docs/ha.md).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/model/result.h"

namespace sluice::server {

struct StoredJob {
  uint64_t id = 0;
  std::string state;
  std::string record;  // JSON (see state.cc)
};

struct Write {
  std::vector<StoredJob> jobs;                            // upserted by id
  std::vector<std::pair<std::string, std::string>> meta;  // key -> value, upserted
  std::vector<std::string> events;                        // event-log lines (JSON)
  std::vector<uint64_t> deleted;                          // job ids removed (after `jobs`)
  bool empty() const { return jobs.empty() && meta.empty() && events.empty() && deleted.empty(); }
};

class Store {
 public:
  virtual ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Startup reads (before start()).
  virtual Result<std::vector<StoredJob>> load_jobs() = 0;
  virtual std::optional<std::string> get_meta(const std::string& key) = 0;
  // Every meta key that starts with `prefix`, in key order (per-node entries).
  virtual std::vector<std::pair<std::string, std::string>> meta_with_prefix(
      const std::string& prefix) = 0;
  // Every event-log line, in commit order (startup, before start()): the job history is
  // rebuilt from them. Returns why not ("" when done).
  virtual std::string for_each_event(const std::function<void(const std::string&)>& f);
  // Where the data lives, for messages: the data directory, or the etcd endpoints and prefix.
  virtual std::string describe() const = 0;

  // Starts the writer thread. on_commit(seconds, writes) is called after every commit.
  void start(std::function<void(double, size_t)> on_commit = {});
  // Queues a write; the ticket is waited on with wait().
  uint64_t enqueue(Write w);
  // Blocks until the ticket's transaction committed (true) or failed (false; error() says why).
  bool wait(uint64_t ticket);
  bool write(Write w) { return wait(enqueue(std::move(w))); }
  // Calls f(ok) once the ticket's transaction committed (true) or failed (false), as wait()
  // would return, without a thread waiting meanwhile: on the writer thread right after the
  // commit, or at once on this thread when it is already done. `f` must not block and must not
  // wait on this store (it delays every later acknowledgement): hand anything longer to a
  // thread of its own. A handler that answers from `f` frees its worker during the fsync, so
  // the submissions of every waiting client share the next commit (group commit, issue 38).
  void when_durable(uint64_t ticket, std::function<void(bool ok)> f);
  // Returns once every write queued so far has committed or failed and every when_durable()
  // callback registered so far has run: stop whatever registers them first (the HTTP server),
  // then drain, then let go of what the callbacks use.
  void drain();
  std::string error() const;
  // A commit failed (disk full, I/O error, etcd lost, leadership lost): every later write fails
  // too, without trying, so nothing is acknowledged after a write that was lost. Cleared by a
  // restart.
  bool failed() const;

 protected:
  Store() = default;
  // Commits the batch durably; false with *error set when any of it may not have committed.
  virtual bool commit(std::vector<Write>& batch, std::string* error) = 0;
  // Pipelining: how many commits may be in flight at once (1: one after the other). With more,
  // stage() runs on the writer thread in ticket order and returns the part that waits for the
  // backend, which runs on a thread of its own while the next batches are staged and sent; the
  // backend must apply them in order (EtcdStore: a txn conditioned on its predecessor's).
  // Batches are still acknowledged in order, and none after one that failed.
  using Send = std::function<bool(std::string* error)>;
  virtual size_t pipeline_depth() const { return 1; }
  // Default: the whole commit() in the part returned.
  virtual Send stage(std::vector<Write>& batch);
  // gather()'s longest wait for the callers a commit answered, given that commit's time.
  virtual std::chrono::duration<double> gather_pause(double last_commit_s) const {
    return std::chrono::duration<double>(std::min(0.005, last_commit_s / 2));
  }
  // Stops the writer thread after it wrote what is queued; a backend's destructor calls it
  // before it closes what commit() uses.
  void stop_writer();
  // Fails every write not yet committed and all later ones (the backend learned that it can no
  // longer write: EtcdStore's lease expired).
  void fail_from_now(const std::string& why);

 private:
  struct Flight;
  void run();
  void launch(Flight& f, std::vector<Write>& batch, bool inline_send);
  void finish(Flight& f);
  void gather(std::unique_lock<std::mutex>& lk, double last_commit_s);
  bool ticket_ok(uint64_t ticket) const { return first_failed_ == 0 || ticket < first_failed_; }

  std::function<void(double, size_t)> on_commit_;
  mutable std::mutex mu_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<Write> queue_;
  // when_durable()'s callbacks not yet called, in ticket order of registration.
  std::vector<std::pair<uint64_t, std::function<void(bool)>>> callbacks_;
  // gather(): how many writes to wait for before staging the next batch (0: none), set when a
  // commit answered callers through when_durable().
  size_t gather_target_ = 0;
  uint64_t next_ticket_ = 1;  // ticket of the next enqueued write
  uint64_t committed_ = 0;    // every ticket <= this has committed or failed
  // The first ticket that failed; it and all later ones fail. Atomic: /readyz reads it on the
  // HTTP I/O thread.
  std::atomic<uint64_t> first_failed_{0};
  std::string error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sluice::server
