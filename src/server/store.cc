#include "server/store.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace sluice::server {

Result<std::unique_ptr<Store>> Store::open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create data directory " + dir + ": " + ec.message()};
  std::unique_ptr<Store> s(new Store());
  s->dir_ = dir;
  const std::string path = dir + "/sluice.db";
  if (sqlite3_open_v2(path.c_str(), &s->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return Error{"cannot open " + path + ": " +
                 (s->db_ ? sqlite3_errmsg(s->db_) : std::string("out of memory"))};
  // WAL + FULL: a commit is on disk (the WAL is fsynced) when sqlite3_step returns.
  if (!s->exec("PRAGMA journal_mode=WAL") || !s->exec("PRAGMA synchronous=FULL") ||
      !s->exec("PRAGMA busy_timeout=5000") ||
      !s->exec("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, state TEXT NOT NULL, "
               "record TEXT NOT NULL)") ||
      !s->exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)") ||
      !s->exec("CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
               "line TEXT NOT NULL)"))
    return Error{"cannot initialise " + path + ": " + s->error_};
  const std::string events = dir + "/events.jsonl";
  s->events_ = std::fopen(events.c_str(), "a");
  if (!s->events_) return Error{"cannot open " + events + " for appending"};
  return s;
}

Store::~Store() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  queued_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (events_) std::fclose(events_);
  if (db_) sqlite3_close(db_);
}

bool Store::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) == SQLITE_OK) return true;
  error_ = std::string(sql) + ": " + (msg ? msg : "error");
  sqlite3_free(msg);
  return false;
}

Result<std::vector<StoredJob>> Store::load_jobs() {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT id, state, record FROM jobs ORDER BY id", -1, &st, nullptr) !=
      SQLITE_OK)
    return Error{sqlite3_errmsg(db_)};
  std::vector<StoredJob> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    StoredJob j;
    j.id = static_cast<uint64_t>(sqlite3_column_int64(st, 0));
    j.state = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    j.record = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
    out.push_back(std::move(j));
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return Error{sqlite3_errmsg(db_)};
  return out;
}

std::optional<std::string> Store::get_meta(const std::string& key) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT value FROM meta WHERE key = ?", -1, &st, nullptr) !=
      SQLITE_OK)
    return std::nullopt;
  sqlite3_bind_text(st, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<std::string> v;
  if (sqlite3_step(st) == SQLITE_ROW) v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return v;
}

void Store::start(std::function<void(double, size_t)> on_commit) {
  on_commit_ = std::move(on_commit);
  thread_ = std::thread([this] { run(); });
}

uint64_t Store::enqueue(Write w) {
  std::lock_guard lk(mu_);
  queue_.push_back(std::move(w));
  const uint64_t t = next_ticket_++;
  queued_cv_.notify_one();
  return t;
}

bool Store::wait(uint64_t ticket) {
  std::unique_lock lk(mu_);
  done_cv_.wait(lk, [&] { return committed_ >= ticket; });
  for (const auto& [lo, hi] : failed_)
    if (ticket >= lo && ticket <= hi) return false;
  return true;
}

std::string Store::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

void Store::run() {
  for (;;) {
    std::vector<Write> batch;
    uint64_t first = 0;
    {
      std::unique_lock lk(mu_);
      queued_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left to write
      first = committed_ + 1;
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = commit(batch);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard lk(mu_);
      const uint64_t last = first + batch.size() - 1;
      if (!ok) failed_.push_back({first, last});
      committed_ = last;
    }
    done_cv_.notify_all();
    if (ok && on_commit_) on_commit_(secs, batch.size());
  }
}

bool Store::commit(std::vector<Write>& batch) {
  std::string err;
  auto fail = [&](const char* what) {
    err = std::string(what) + ": " + sqlite3_errmsg(db_);
    return false;
  };
  auto body = [&]() -> bool {
    if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
      return fail("begin");
    sqlite3_stmt *job = nullptr, *meta = nullptr, *ev = nullptr, *del = nullptr;
    sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO jobs (id, state, record) VALUES (?, ?, ?)", -1,
                       &job, nullptr);
    sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", -1, &meta,
                       nullptr);
    sqlite3_prepare_v2(db_, "INSERT INTO events (line) VALUES (?)", -1, &ev, nullptr);
    sqlite3_prepare_v2(db_, "DELETE FROM jobs WHERE id = ?", -1, &del, nullptr);
    bool ok = job && meta && ev && del;
    for (auto& w : batch) {
      for (auto& j : w.jobs) {
        if (!ok) break;
        sqlite3_bind_int64(job, 1, static_cast<sqlite3_int64>(j.id));
        sqlite3_bind_text(job, 2, j.state.c_str(), -1, SQLITE_STATIC);
        sqlite3_bind_text(job, 3, j.record.c_str(), -1, SQLITE_STATIC);
        ok = sqlite3_step(job) == SQLITE_DONE;
        sqlite3_reset(job);
      }
      for (auto& [k, v] : w.meta) {
        if (!ok) break;
        sqlite3_bind_text(meta, 1, k.c_str(), -1, SQLITE_STATIC);
        sqlite3_bind_text(meta, 2, v.c_str(), -1, SQLITE_STATIC);
        ok = sqlite3_step(meta) == SQLITE_DONE;
        sqlite3_reset(meta);
      }
      for (auto& line : w.events) {
        if (!ok) break;
        sqlite3_bind_text(ev, 1, line.c_str(), -1, SQLITE_STATIC);
        ok = sqlite3_step(ev) == SQLITE_DONE;
        sqlite3_reset(ev);
      }
      for (uint64_t id : w.deleted) {
        if (!ok) break;
        sqlite3_bind_int64(del, 1, static_cast<sqlite3_int64>(id));
        ok = sqlite3_step(del) == SQLITE_DONE;
        sqlite3_reset(del);
      }
    }
    if (!ok) fail("write");
    sqlite3_finalize(job);
    sqlite3_finalize(meta);
    sqlite3_finalize(ev);
    sqlite3_finalize(del);
    if (!ok) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return false;
    }
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      fail("commit");
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return false;
    }
    return true;
  };
  const bool ok = body();
  if (!ok) {
    std::lock_guard lk(mu_);
    error_ = err;
    return false;
  }
  // The event log file mirrors the committed events (the table is the durable copy).
  for (auto& w : batch)
    for (auto& line : w.events) {
      std::fputs(line.c_str(), events_);
      std::fputc('\n', events_);
    }
  std::fflush(events_);
  return true;
}

}  // namespace sluice::server
