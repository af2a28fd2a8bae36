#pragma once
// The embedded store (the default): SQLite in WAL mode with synchronous=FULL in the data
// directory, one fsync per group commit, plus the event log mirrored to DIR/events.jsonl.
#include <cstdio>

#include "server/store.h"

struct sqlite3;

namespace sluice::server {

struct StoreOptions {
  // The database is empty or missing while the event log shows earlier state (it was deleted,
  // truncated to 0 bytes or replaced): refused unless this is set. Then the store starts
  // empty and job ids continue after the highest id in the event log.
  bool fresh = false;
  // Caps the database at this many pages (PRAGMA max_page_count; 0: no cap). Writes past it
  // fail as on a full disk, which is how the unit tests fill it.
  int64_t max_db_pages = 0;
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

  std::string dir_;
  int lock_fd_ = -1;
  sqlite3* db_ = nullptr;
  FILE* events_ = nullptr;
  std::string open_error_;  // why a step of open() failed
};

}  // namespace sluice::server
