#include "server/sqlite_store.h"

#include "server/sqlite_gather_vfs.h"

#include <sqlite3.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace sluice::server {

namespace {

// A column's text; "" for NULL (a damaged or foreign database may hold one).
std::string column_text(sqlite3_stmt* st, int col) {
  const auto* t = sqlite3_column_text(st, col);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(st, col)))
           : std::string();
}

off_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

}  // namespace

Result<bool> SqliteStore::lock_dir() {
  const std::string path = dir_ + "/sluice.lock";
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return Error{"cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const ssize_t got = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
    std::string holder = got > 0 ? std::string(pid, static_cast<size_t>(got)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    return Error{"data directory " + dir_ + " is in use by another sluice serve" +
                 (holder.empty() ? "" : " (pid " + holder + ")") +
                 ": two servers on one data directory would lose jobs"};
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, me.data(), me.size(), 0) < 0)
    return Error{"cannot write " + path + ": " + std::strerror(errno)};
  return true;
}

// An empty database beside an event log that has lines means the database was lost.
Result<bool> SqliteStore::check_not_lost(bool existed, const StoreOptions& options) {
  sqlite3_stmt* st = nullptr;
  int64_t rows = 0;
  if (sqlite3_prepare_v2(db_, "SELECT (SELECT count(*) FROM jobs) + (SELECT count(*) FROM meta)",
                         -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    rows = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  const std::string log = dir_ + "/events.jsonl";
  if (rows > 0 || !EventLogFile::has_records(dir_)) return true;
  if (!options.fresh)
    return Error{dir_ + "/sluice.db is " + (existed ? "empty" : "missing") + " but " + log +
                 " records earlier jobs: the database was lost or replaced. Restore it from a "
                 "backup, or start afresh with --fresh-store (no jobs are recovered; job ids "
                 "continue after the event log's)"};
  const uint64_t next = EventLogFile::max_job_id(dir_) + 1;
  Write w;
  w.meta.push_back({"next_job_id", std::to_string(next)});
  std::vector<Write> batch{std::move(w)};
  std::string err;
  if (!commit(batch, &err)) return Error{"cannot write to " + dir_ + "/sluice.db: " + err};
  return true;
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& dir,
                                                       StoreOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The database holds the configuration (the tokens) and every job's environment, and pods
  // of other users may run on this machine: the directory cannot be listed by them (0711:
  // `sluice up` keeps its agents' state directories inside, which pods must traverse) and its
  // files are the server's alone (0600).
  namespace fs = std::filesystem;
  if (!ec)
    fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec, ec);
  if (ec) return Error{"cannot create data directory " + dir + ": " + ec.message()};
  std::unique_ptr<SqliteStore> s(new SqliteStore());
  s->dir_ = dir;
  if (auto locked = s->lock_dir(); !locked) return Error{locked.error()};
  const std::string path = dir + "/sluice.db";
  const bool existed = file_size(path) >= 0;
  // SQLite gives a new -wal or -shm file the database's mode: the database's own is enough,
  // older ones (0644 before issue 14) are tightened.
  if (!existed) ::close(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    ::chmod((path + suffix).c_str(), 0600);
  if (sqlite3_open_v2(path.c_str(), &s->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      sqlite_gather_vfs()) != SQLITE_OK)
    return Error{"cannot open " + path + ": " +
                 (s->db_ ? sqlite3_errmsg(s->db_) : std::string("out of memory"))};
  // WAL + FULL: a commit is on disk (the WAL is fsynced) when sqlite3_step returns. The WAL's
  // frames reach it in one write per commit (sqlite_gather_vfs.h), not two per page.
  // EXCLUSIVE before the first access: DIR's lock (lock_dir) makes this connection the file's
  // only user, so SQLite keeps its locks for good and the WAL index in the heap (no -shm file):
  // no fcntl lock and unlock per transaction (issue 38: 2.75 system calls per job at batch 1).
  // quick_check reads every page once: a truncated or damaged file is refused here, with the
  // reason, instead of failing (or losing records) later.
  if (!s->exec("PRAGMA busy_timeout=5000") || !s->exec("PRAGMA locking_mode=EXCLUSIVE") ||
      !s->exec("PRAGMA journal_mode=WAL") || !s->exec("PRAGMA synchronous=FULL") ||
      !s->quick_check() ||
      !s->exec("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, "
               "record TEXT NOT NULL)") ||
      !s->exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)") ||
      !s->exec("CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
               "line TEXT NOT NULL)"))
    return Error{path + " cannot be used: " + s->open_error_ +
                 " (is it a sluice database? restore it from a backup, or move it away and "
                 "start with --fresh-store)"};
  if (auto ok = s->check_not_lost(existed, options); !ok) return Error{ok.error()};
  if (options.max_db_pages > 0) {
    const std::string cap = "PRAGMA max_page_count=" + std::to_string(options.max_db_pages);
    if (!s->exec(cap.c_str())) return Error{path + ": " + s->open_error_};
  }
  auto log = EventLogFile::open(dir, options.event_log);
  if (!log) return Error{log.error()};
  s->events_ = std::move(*log);
  s->max_events_ = options.max_events;
  s->trim_every_ = std::clamp<int64_t>(options.max_events / 16, 1, 4096);
  s->since_trim_ = s->trim_every_;  // the first commit trims: a lowered setting applies at once
  return s;
}

bool SqliteStore::quick_check() {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "PRAGMA quick_check", -1, &st, nullptr) != SQLITE_OK) {
    open_error_ = std::string("PRAGMA quick_check: ") + sqlite3_errmsg(db_);
    return false;
  }
  std::string problems;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(st, 0);
    const std::string line = t ? reinterpret_cast<const char*>(t) : "";
    if (line != "ok" && problems.size() < 300) problems += (problems.empty() ? "" : "; ") + line;
  }
  if (rc != SQLITE_DONE && problems.empty()) problems = sqlite3_errmsg(db_);
  sqlite3_finalize(st);
  if (problems.empty()) return true;
  open_error_ = "the database is damaged: " + problems;
  return false;
}

SqliteStore::~SqliteStore() {
  stop_writer();
  finalize_statements();
  if (db_) sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

bool SqliteStore::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  open_error_ = std::string(sql) + ": " + (msg ? msg : "error");
  sqlite3_free(msg);
  return false;
}

Result<std::vector<StoredJob>> SqliteStore::load_jobs() {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT id, state, record FROM jobs ORDER BY id", -1, &st, nullptr) !=
      SQLITE_OK)
    return Error{sqlite3_errmsg(db_)};
  std::vector<StoredJob> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    StoredJob j;
    j.id = static_cast<uint64_t>(sqlite3_column_int64(st, 0));
    j.state = column_text(st, 1);
    j.record = column_text(st, 2);
    out.push_back(std::move(j));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return Error{sqlite3_errmsg(db_)};
  return out;
}

std::string SqliteStore::for_each_event(const std::function<void(const std::string&)>& f) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT line FROM events ORDER BY seq", -1, &st, nullptr) !=
      SQLITE_OK)
    return sqlite3_errmsg(db_);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) f(column_text(st, 0));
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? std::string() : std::string(sqlite3_errmsg(db_));
}

std::optional<std::string> SqliteStore::get_meta(const std::string& key) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE key = ?", -1, &st, nullptr) !=
      SQLITE_OK)
    return std::nullopt;
  sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<std::string> v;
  if (sqlite3_step(st) == SQLITE_ROW) v = column_text(st, 0);
  sqlite3_finalize(st);
  return v;
}

std::vector<std::pair<std::string, std::string>> SqliteStore::meta_with_prefix(
    const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key", -1,
                         &st, nullptr) != SQLITE_OK)
    return out;
  sqlite3_bind_int(st, 1, static_cast<int>(prefix.size()));
  sqlite3_bind_text(st, 2, prefix.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) out.emplace_back(column_text(st, 0), column_text(st, 1));
  sqlite3_finalize(st);
  return out;
}

// The commit's statements, once: SQLITE_PREPARE_PERSISTENT keeps them off SQLite's lookaside
// memory, since they live as long as the store. False with *why when one cannot be prepared.
bool SqliteStore::prepare_statements(std::string* why) {
  if (st_.begin) return true;
  const std::pair<sqlite3_stmt**, const char*> all[] = {
      {&st_.begin, "BEGIN IMMEDIATE"},
      {&st_.commit, "COMMIT"},
      {&st_.job, "INSERT OR REPLACE INTO jobs (id, state, record) VALUES (?, ?, ?)"},
      {&st_.meta, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"},
      {&st_.event, "INSERT INTO events (line) VALUES (?)"},
      {&st_.del, "DELETE FROM jobs WHERE id = ?"}};
  for (const auto& [stmt, sql] : all) {
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) == SQLITE_OK)
      continue;
    *why = std::string(sql) + ": " + sqlite3_errmsg(db_);
    finalize_statements();
    return false;
  }
  return true;
}

void SqliteStore::finalize_statements() {
  for (auto* stmt : {&st_.begin, &st_.commit, &st_.job, &st_.meta, &st_.event, &st_.del}) {
    sqlite3_finalize(*stmt);  // a no-op for nullptr
    *stmt = nullptr;
  }
}

// Runs one prepared statement to its end and resets it for the next use, its parameters
// cleared (they were bound SQLITE_STATIC to strings of this batch, gone before the next);
// false with *why set.
bool SqliteStore::step_once(sqlite3_stmt* stmt, std::string* why) {
  const bool ok = sqlite3_step(stmt) == SQLITE_DONE;
  if (!ok) *why = sqlite3_errmsg(db_);
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  return ok;
}

// The batch's rows, inside the open transaction; false with *why set when one failed.
bool SqliteStore::write_rows(std::vector<Write>& batch, std::string* why) {
  for (auto& w : batch) {
    for (auto& j : w.jobs) {
      sqlite3_bind_int64(st_.job, 1, static_cast<sqlite3_int64>(j.id));
      sqlite3_bind_text(st_.job, 2, j.state.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(st_.job, 3, j.record.c_str(), -1, SQLITE_STATIC);
      if (!step_once(st_.job, why)) return false;
    }
    for (auto& [k, v] : w.meta) {
      sqlite3_bind_text(st_.meta, 1, k.c_str(), -1, SQLITE_STATIC);
      sqlite3_bind_text(st_.meta, 2, v.c_str(), -1, SQLITE_STATIC);
      if (!step_once(st_.meta, why)) return false;
    }
    for (auto& line : w.events) {
      sqlite3_bind_text(st_.event, 1, line.c_str(), -1, SQLITE_STATIC);
      if (!step_once(st_.event, why)) return false;
      since_trim_ += 1;
    }
    for (uint64_t id : w.deleted) {
      sqlite3_bind_int64(st_.del, 1, static_cast<sqlite3_int64>(id));
      if (!step_once(st_.del, why)) return false;
    }
  }
  return true;
}

// Deletes the oldest events beyond the newest max_events_ (by sequence number: rows are only
// ever deleted from the front), at most kTrimBatch of them; when it hit that bound, the next
// commit trims again. Inside the commit's transaction: durable with it.
bool SqliteStore::trim_events(std::string* why) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "DELETE FROM events WHERE seq < min((SELECT min(seq) FROM events) + ?, "
                         "(SELECT max(seq) FROM events) - ? + 1)",
                         -1, &st, nullptr) != SQLITE_OK)
    return false;
  sqlite3_bind_int64(st, 1, kTrimBatch);
  sqlite3_bind_int64(st, 2, max_events_);
  const bool ok = sqlite3_step(st) == SQLITE_DONE;
  if (!ok) *why = sqlite3_errmsg(db_);
  sqlite3_finalize(st);
  if (ok) since_trim_ = sqlite3_changes(db_) >= kTrimBatch ? trim_every_ : 0;
  return ok;
}

bool SqliteStore::commit(std::vector<Write>& batch, std::string* error) {
  std::string why;
  auto fail = [&](const char* what) {
    *error = std::string(what) + ": " + (why.empty() ? sqlite3_errmsg(db_) : why);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return false;
  };
  if (!prepare_statements(&why)) {
    *error = "prepare: " + why;
    return false;
  }
  if (!step_once(st_.begin, &why)) {
    *error = "begin: " + why;
    return false;
  }
  if (!write_rows(batch, &why)) return fail("write");
  if (max_events_ > 0 && since_trim_ >= trim_every_ && !trim_events(&why))
    return fail("trim events");
  if (!step_once(st_.commit, &why)) return fail("commit");
  // The event log file mirrors the committed events (the table is the durable copy); open()
  // commits once before it opens the file (check_not_lost), with no events.
  if (events_) {
    for (auto& w : batch)
      for (auto& line : w.events) events_->append(line);
    events_->flush();
  }
  return true;
}

}  // namespace sluice::server
