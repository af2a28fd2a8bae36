#pragma once
// The embedded store (the default): SQLite in WAL mode with synchronous=FULL in the data
// directory, one fsync per group commit, plus the event log mirrored to DIR/events.jsonl
// (event_log_file.h: rotated by size). The events table keeps the newest max_events events.
#include <memory>

#include "server/event_log_file.h"
#include "server/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sluice::server {

struct StoreOptions {
  // The database is empty or missing while the event log shows earlier state (it was deleted,
  // truncated to 0 bytes or replaced): refused unless this is set. Then the store starts
  // empty and job ids continue after the highest id in the event log.
  bool fresh = false;
  // Caps the database at this many pages (PRAGMA max_page_count; 0: no cap). Writes past it
  // fail as on a full disk, which is how the unit tests fill it.
  int64_t max_db_pages = 0;
  // DIR/events.jsonl's rotation (size, files kept).
  EventLogOptions event_log;
  // The events table (the job history's source at startup) keeps the newest this many events
  // (0: all; `serve --events-keep`, as etcd's events-keep). Trimmed inside a group commit after
  // every ~1/16 of it (at most 4,096) events committed, at most kTrimBatch rows at a time:
  // between trims it holds a little more.
  int64_t max_events = 1'000'000;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating) DIR/sluice.db and the event log DIR/events.jsonl, after taking DIR's lock
  // (DIR/sluice.lock, flock) for the store's lifetime: one writer per data directory.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& dir,
                                                   StoreOptions options = {});
  ~SqliteStore() override;

  Result<std::vector<StoredJob>> load_jobs() override;
  std::optional<std::string> get_meta(const std::string& key) override;
  std::vector<std::pair<std::string, std::string>> meta_with_prefix(
      const std::string& prefix) override;
  std::string for_each_event(const std::function<void(const std::string&)>& f) override;
  std::string describe() const override { return dir_; }
  const std::string& dir() const { return dir_; }

 private:
  SqliteStore() = default;
  bool commit(std::vector<Write>& batch, std::string* error) override;
  bool exec(const char* sql);
  bool quick_check();
  Result<bool> lock_dir();
  Result<bool> check_not_lost(bool existed, const StoreOptions& options);
  bool write_rows(std::vector<Write>& batch, std::string* why);
  bool trim_events(std::string* why);
  bool prepare_statements(std::string* why);
  void finalize_statements();
  bool step_once(sqlite3_stmt* stmt, std::string* why);

  // The most events rows one trim deletes (its share of a commit's time is bounded).
  static constexpr int64_t kTrimBatch = 50'000;

  std::string dir_;
  int lock_fd_ = -1;
  sqlite3* db_ = nullptr;
  // The commit's statements, prepared at the first commit and reused: at one job per request
  // there is a commit per job or two, and preparing them each time cost more than their rows
  // (docs/benchmarks.md, issue 38).
  struct Statements {
    sqlite3_stmt *begin = nullptr, *commit = nullptr, *job = nullptr, *meta = nullptr,
                 *event = nullptr, *del = nullptr;
  };
  Statements st_;
  std::unique_ptr<EventLogFile> events_;
  int64_t max_events_ = 0;
  int64_t trim_every_ = 1;  // events committed between two trims
  int64_t since_trim_ = 0;  // events committed since the last trim
  std::string open_error_;  // why a step of open() failed
};

}  // namespace sluice::server
