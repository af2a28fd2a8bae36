#pragma once
// The durable store: SQLite in WAL mode with synchronous=FULL, written by one thread.
//
// Writers enqueue a Write and wait for its ticket; the writer thread takes everything queued,
// commits it as one transaction (one fsync), then wakes the waiters: group commit, so many
// concurrent submissions share an fsync and each is on disk before it is acknowledged.
// Reads happen once, at startup, before the writer starts; afterwards the server serves reads
// from memory.
#include <atomic>
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

struct sqlite3;

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

struct StoreOptions {
  // The database is empty or missing while the event log shows earlier state (it was deleted,
  // truncated to 0 bytes or replaced): refused unless this is set. Then the store starts
  // empty and job ids continue after the highest id in the event log.
  bool fresh = false;
  // Caps the database at this many pages (PRAGMA max_page_count; 0: no cap). Writes past it
  // fail as on a full disk, which is how the unit tests fill it.
  int64_t max_db_pages = 0;
};

class Store {
 public:
  // Opens (creating) DIR/sluice.db and the event log DIR/events.jsonl, after taking DIR's lock
  // (DIR/sluice.lock, flock) for the store's lifetime: one writer per data directory.
  static Result<std::unique_ptr<Store>> open(const std::string& dir, StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Startup reads (before start()).
  Result<std::vector<StoredJob>> load_jobs();
  std::optional<std::string> get_meta(const std::string& key);

  // Starts the writer thread. on_commit(seconds, writes) is called after every commit.
  void start(std::function<void(double, size_t)> on_commit = {});
  // Queues a write; the ticket is waited on with wait().
  uint64_t enqueue(Write w);
  // Blocks until the ticket's transaction committed (true) or failed (false; error() says why).
  bool wait(uint64_t ticket);
  bool write(Write w) { return wait(enqueue(std::move(w))); }
  std::string error() const;
  // A commit failed (disk full, I/O error): every later write fails too, without trying, so
  // nothing is acknowledged after a write that was lost. Cleared by a restart.
  bool failed() const;
  const std::string& dir() const { return dir_; }

 private:
  Store() = default;
  void run();
  bool commit(std::vector<Write>& batch);
  bool exec(const char* sql);
  bool quick_check();
  Result<bool> lock_dir();
  Result<bool> check_not_lost(bool existed, const StoreOptions& options);

  std::string dir_;
  int lock_fd_ = -1;
  sqlite3* db_ = nullptr;
  FILE* events_ = nullptr;
  std::function<void(double, size_t)> on_commit_;

  mutable std::mutex mu_;
  std::condition_variable queued_cv_, done_cv_;
  std::deque<Write> queue_;
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
