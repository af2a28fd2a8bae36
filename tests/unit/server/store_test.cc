// The durable store under faults (issue 13): one writer per data directory, a lost or damaged
// database refused with a clear message, ids that never repeat, and a failed commit that fails
// every later write.
#include "server/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace sluice::server {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  const auto dir =
      fs::temp_directory_path() / ("sluice-store-" + tag + "-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// A store that has committed one job and a meta key, then closed.
void seed(const fs::path& dir) {
  auto s = SqliteStore::open(dir.string());
  ASSERT_TRUE(s.ok()) << s.error();
  (*s)->start();
  ASSERT_TRUE((*s)->write(
      Write{{{7, "pending", "{}"}}, {{"next_job_id", "8"}}, {R"({"event":"submit","id":7})"}, {}}));
}

// The finding: a second server on the same data dir lost 18 of 30 acknowledged jobs.
TEST(Store, OneWriterPerDataDirectory) {
  const auto dir = fresh_dir("lock");
  auto first = SqliteStore::open(dir.string());
  ASSERT_TRUE(first.ok()) << first.error();
  auto second = SqliteStore::open(dir.string());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().find("is in use by another sluice serve (pid " +
                                std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.error();
  first->reset();  // closing releases the lock
  EXPECT_TRUE(SqliteStore::open(dir.string()).ok());
  fs::remove_all(dir);
}

// Issue 38: the store is the file's only user (DIR's lock), so SQLite holds its locks for good
// and keeps the WAL index in the heap: no fcntl lock and unlock per transaction, no -shm file.
// Its records still reach the file: a reader sees them once the store has closed.
TEST(Store, HoldsTheDatabaseExclusivelyWhileOpen) {
  const auto dir = fresh_dir("exclusive");
  const std::string db = (dir / "sluice.db").string();
  auto count_jobs = [&](int* rc) {
    sqlite3* other = nullptr;
    sqlite3_open_v2(db.c_str(), &other, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    int n = -1;
    *rc = sqlite3_prepare_v2(other, "SELECT count(*) FROM jobs", -1, &st, nullptr);
    if (*rc == SQLITE_OK && (*rc = sqlite3_step(st)) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(other);
    return n;
  };
  {
    auto s = SqliteStore::open(dir.string());
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    ASSERT_TRUE(
        (*s)->write(Write{{{1, "pending", "{}"}}, {}, {R"({"event":"submit","id":1})"}, {}}));
    EXPECT_FALSE(fs::exists(dir / "sluice.db-shm"));
    int rc = 0;
    EXPECT_EQ(count_jobs(&rc), -1);
    EXPECT_EQ(rc, SQLITE_BUSY) << sqlite3_errstr(rc);
  }
  int rc = 0;
  EXPECT_EQ(count_jobs(&rc), 1) << sqlite3_errstr(rc);
  fs::remove_all(dir);
}

// Issue 14: a pod of another user on the server's machine read every token from sluice.db.
TEST(Store, DataDirectoryIsTheServersOnly) {
  const auto dir = fresh_dir("mode");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // even one left open by an admin
  write_file(dir / "events.jsonl", "");  // an older server's files: 0644
  fs::permissions(dir / "events.jsonl", fs::perms::owner_read | fs::perms::owner_write |
                                            fs::perms::group_read | fs::perms::others_read);
  {
    auto s = SqliteStore::open(dir.string());
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    ASSERT_TRUE(
        (*s)->write(Write{{{1, "pending", "{}"}}, {}, {R"({"event":"submit","id":1})"}, {}}));
  }
  // Searchable (sluice up keeps its agents' state inside), not listable; files the server's.
  const auto searchable = fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec;
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, searchable);
  const auto own = fs::perms::owner_read | fs::perms::owner_write;
  for (const char* f : {"sluice.db", "events.jsonl"})
    EXPECT_EQ(fs::status(dir / f).permissions() & fs::perms::all, own) << f;
  for (const char* f : {"sluice.db-wal", "sluice.db-shm"}) {
    if (fs::exists(dir / f)) {
      EXPECT_EQ(fs::status(dir / f).permissions() & fs::perms::all, own) << f;
    }
  }
  fs::remove_all(dir);
}

// The finding: a 0-byte or deleted database started empty and gave job ids out again.
TEST(Store, LostDatabaseIsRefusedUnlessStartedAfresh) {
  for (const bool zero_bytes : {false, true}) {
    const auto dir = fresh_dir(zero_bytes ? "empty" : "deleted");
    seed(dir);
    fs::remove(dir / "sluice.db-wal");
    fs::remove(dir / "sluice.db-shm");
    if (zero_bytes)
      write_file(dir / "sluice.db", "");
    else
      fs::remove(dir / "sluice.db");
    auto refused = SqliteStore::open(dir.string());
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find(zero_bytes ? "sluice.db is empty" : "sluice.db is missing"),
              std::string::npos)
        << refused.error();
    EXPECT_NE(refused.error().find("--fresh-store"), std::string::npos);
    // Afresh: empty, and ids continue after the event log's highest.
    auto fresh = SqliteStore::open(dir.string(), StoreOptions{true});
    ASSERT_TRUE(fresh.ok()) << fresh.error();
    EXPECT_EQ((*fresh)->get_meta("next_job_id").value_or(""), "8");
    EXPECT_TRUE((*fresh)->load_jobs()->empty());
    fresh->reset();
    // The fresh store is not empty any more: a plain start works.
    EXPECT_TRUE(SqliteStore::open(dir.string()).ok());
    fs::remove_all(dir);
  }
}

// The finding: a truncated or text sluice.db gave SIGSEGV with no message.
TEST(Store, DamagedDatabaseIsOneClearError) {
  const auto dir = fresh_dir("damaged");
  seed(dir);
  {  // checkpoint the WAL into the main file, so truncating the file loses pages
    auto s = SqliteStore::open(dir.string());
    ASSERT_TRUE(s.ok());
  }
  fs::remove(dir / "sluice.db-wal");
  fs::remove(dir / "sluice.db-shm");
  const auto size = fs::file_size(dir / "sluice.db");
  ASSERT_GT(size, 4096u);
  fs::resize_file(dir / "sluice.db", size / 2 + 100);
  auto truncated = SqliteStore::open(dir.string());
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().find("sluice.db cannot be used"), std::string::npos)
      << truncated.error();

  write_file(dir / "sluice.db", "this is not a database, it is a text file\n");
  auto text = SqliteStore::open(dir.string());
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().find("file is not a database"), std::string::npos) << text.error();
  fs::remove_all(dir);
}

TEST(Store, AFailedCommitFailsEveryLaterWrite) {
  const auto dir = fresh_dir("failed");
  auto s = SqliteStore::open(dir.string(), StoreOptions{false, /*max_db_pages=*/8});
  ASSERT_TRUE(s.ok()) << s.error();
  (*s)->start();
  EXPECT_TRUE((*s)->write(Write{{{1, "pending", "{}"}}, {}, {}, {}}));
  // Far more than 8 pages: the database is "full".
  const std::string big(64 * 1024, 'x');
  EXPECT_FALSE((*s)->write(Write{{{2, "pending", big}}, {}, {}, {}}));
  EXPECT_TRUE((*s)->failed());
  EXPECT_NE((*s)->error().find("full"), std::string::npos) << (*s)->error();
  // A small write would fit, but nothing is written after a lost write.
  EXPECT_FALSE((*s)->write(Write{{{3, "pending", "{}"}}, {}, {}, {}}));
  s->reset();
  auto again = SqliteStore::open(dir.string());
  ASSERT_TRUE(again.ok());
  auto jobs = (*again)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);  // job 1 only
  EXPECT_EQ(jobs->front().id, 1u);
  fs::remove_all(dir);
}

// The WAL's writes are gathered per commit (sqlite_gather_vfs.h). Commits of one record and of
// many pages (a record far past the 128 KiB one write of SQLite's VFS may carry), enough of them
// for SQLite to checkpoint the WAL into the database and start it again, come back whole.
TEST(Store, CommitsOfManyPagesAndCheckpointsComeBackWhole) {
  const auto dir = fresh_dir("gather");
  std::vector<std::string> records;
  {
    auto s = SqliteStore::open(dir.string());
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    for (uint64_t id = 1; id <= 80; ++id) {
      const size_t size = id % 4 == 0 ? 300 * 1024 : id % 3 == 0 ? 20 * 1024 : 100;
      records.push_back(std::string(size, static_cast<char>('a' + id % 26)));
      Write w{{{id, "pending", records.back()}},
              {{"next_job_id", std::to_string(id + 1)}},
              {"{\"event\":\"submit\",\"id\":" + std::to_string(id) + "}"},
              {}};
      if (id % 7 == 0)  // an earlier job rewritten in the same commit
        w.jobs.push_back({id - 1, "running", records[id - 2]});
      ASSERT_TRUE((*s)->write(std::move(w))) << (*s)->error();
    }
  }
  auto s = SqliteStore::open(dir.string());
  ASSERT_TRUE(s.ok()) << s.error();
  auto jobs = (*s)->load_jobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), records.size());
  for (const StoredJob& j : *jobs) {
    EXPECT_EQ(j.record, records[j.id - 1]) << "job " << j.id;
    EXPECT_EQ(j.state, j.id % 7 == 6 ? "running" : "pending") << "job " << j.id;
  }
  fs::remove_all(dir);
}

// Per-node meta keys (node credentials) come back by their prefix, in key order.
TEST(Store, MetaReadsByPrefix) {
  const auto dir = fresh_dir("prefix");
  {
    auto s = SqliteStore::open(dir.string());
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    ASSERT_TRUE((*s)->write(Write{{},
                                  {{"node-credential/n2", "b"},
                                   {"node-credential/n1", "a"},
                                   {"node-credentialz", "not under the prefix"}},
                                  {},
                                  {}}));
  }
  auto s = SqliteStore::open(dir.string());
  ASSERT_TRUE(s.ok()) << s.error();
  using Kv = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ((*s)->meta_with_prefix("node-credential/"),
            (Kv{{"node-credential/n1", "a"}, {"node-credential/n2", "b"}}));
  EXPECT_TRUE((*s)->meta_with_prefix("nothing/").empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sluice::server
