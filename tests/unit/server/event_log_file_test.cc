// The event log's retention (issue 41: one member's 160,000 jobs left a 41 MB events.jsonl that
// was never rotated and an events table that grew without bound): events.jsonl rotates by size
// keeping a set number of files, the database keeps the newest events, and what reads the log
// back (the lost-database check, the id counter after --fresh-store, the history replay) sees
// across both.
#include "server/event_log_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "server/sqlite_store.h"

namespace sluice::server::event_log_test {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& tag) {
  const auto dir =
      fs::temp_directory_path() / ("sluice-evlog-" + tag + "-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string submit_line(int id) {
  return R"({"event":"submit","id":)" + std::to_string(id) + R"(,"name":"j"})";
}

// Every line of the log's files, oldest first.
std::string whole_log(const fs::path& dir) {
  auto files = EventLogFile::files(dir.string());
  std::string all;
  for (auto it = files.rbegin(); it != files.rend(); ++it) all += read_file(*it);
  return all;
}

TEST(EventLogFile, RotatesBySizeAndKeepsTheNewestFiles) {
  const auto dir = fresh_dir("rotate");
  const std::string line = submit_line(10);  // 40 bytes with its newline
  {
    auto log = EventLogFile::open(dir.string(), EventLogOptions{100, 2});
    ASSERT_TRUE(log.ok()) << log.error();
    for (int i = 0; i < 20; ++i) {
      (*log)->append(line);
      (*log)->flush();
    }
  }
  // 40-byte lines, rotated at 100 bytes: 3 lines a file; 20 lines = 6 rotations + 2 lines.
  const auto files = EventLogFile::files(dir.string());
  ASSERT_EQ(files.size(), 3u);  // events.jsonl, .1, .2; .3 and older deleted
  EXPECT_EQ(fs::path(files[0]).filename(), "events.jsonl");
  EXPECT_EQ(fs::path(files[1]).filename(), "events.jsonl.1");
  EXPECT_EQ(fs::path(files[2]).filename(), "events.jsonl.2");
  EXPECT_EQ(fs::file_size(files[0]), 2 * (line.size() + 1));
  EXPECT_EQ(fs::file_size(files[1]), 3 * (line.size() + 1));
  EXPECT_EQ(fs::file_size(files[2]), 3 * (line.size() + 1));
  for (const auto& f : files)
    EXPECT_EQ(fs::status(f).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write)
        << f;
  fs::remove_all(dir);
}

// A batch's lines stay in one file; a lower keep deletes the generations beyond it at the next
// rotation, also past a gap a crash between two renames left.
TEST(EventLogFile, LowerKeepDeletesOlderGenerations) {
  const auto dir = fresh_dir("keep");
  for (const char* old : {"events.jsonl.1", "events.jsonl.2", "events.jsonl.4", "events.jsonl.x"})
    std::ofstream(dir / old) << submit_line(1) << "\n";
  auto log = EventLogFile::open(dir.string(), EventLogOptions{10, 1});
  ASSERT_TRUE(log.ok()) << log.error();
  (*log)->append(submit_line(2));
  (*log)->append(submit_line(3));
  (*log)->flush();                                          // over 10 bytes: rotates
  EXPECT_EQ(EventLogFile::files(dir.string()).size(), 2u);  // events.jsonl (empty), .1
  EXPECT_EQ(read_file(dir / "events.jsonl.1"), submit_line(2) + "\n" + submit_line(3) + "\n");
  EXPECT_TRUE(fs::exists(dir / "events.jsonl.x"));  // not the log's: left alone
  fs::remove_all(dir);
}

TEST(EventLogFile, NoRotationAtZeroBytes) {
  const auto dir = fresh_dir("never");
  auto log = EventLogFile::open(dir.string(), EventLogOptions{0, 4});
  ASSERT_TRUE(log.ok()) << log.error();
  for (int i = 0; i < 100; ++i) (*log)->append(submit_line(i));
  (*log)->flush();
  EXPECT_EQ(EventLogFile::files(dir.string()).size(), 1u);
  fs::remove_all(dir);
}

// The newest file may hold only the end of an older job: every file counts.
TEST(EventLogFile, MaxJobIdReadsEveryFile) {
  const auto dir = fresh_dir("maxid");
  std::ofstream(dir / "events.jsonl.2") << submit_line(5) << "\n";
  std::ofstream(dir / "events.jsonl.1") << submit_line(9) << "\n";
  std::ofstream(dir / "events.jsonl") << R"({"event":"end","id":3})"
                                      << "\n";
  EXPECT_EQ(EventLogFile::max_job_id(dir.string()), 9u);
  EXPECT_TRUE(EventLogFile::has_records(dir.string()));
  fs::remove(dir / "events.jsonl.1");
  fs::remove(dir / "events.jsonl.2");
  std::ofstream(dir / "events.jsonl", std::ios::trunc);
  EXPECT_FALSE(EventLogFile::has_records(dir.string()));
  fs::remove_all(dir);
}

StoreOptions small_store(int64_t max_events, uint64_t max_bytes) {
  StoreOptions o;
  o.event_log = EventLogOptions{max_bytes, 3};
  o.max_events = max_events;
  return o;
}

// One job, its submit event, one commit.
bool submit(SqliteStore& s, int id) {
  return s.write(Write{{{static_cast<uint64_t>(id), "pending", "{}"}}, {}, {submit_line(id)}, {}});
}

std::vector<std::string> table_events(SqliteStore& s) {
  std::vector<std::string> out;
  EXPECT_EQ(s.for_each_event([&](const std::string& l) { out.push_back(l); }), "");
  return out;
}

// The events table keeps the newest max_events (trimmed in the commits), across a restart; a
// lowered setting applies at the next start.
TEST(SqliteStoreRetention, KeepsTheNewestEvents) {
  const auto dir = fresh_dir("retain");
  {
    auto s = SqliteStore::open(dir.string(), small_store(0, 0));  // 0: keep all
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    for (int id = 1; id <= 100; ++id) ASSERT_TRUE(submit(**s, id));
    EXPECT_EQ(table_events(**s).size(), 100u);
  }
  {
    auto s = SqliteStore::open(dir.string(), small_store(10, 0));
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(table_events(**s).size(), 100u);  // trimmed by the next commit, not at open
    (*s)->start();
    ASSERT_TRUE(submit(**s, 101));
  }
  auto s = SqliteStore::open(dir.string(), small_store(10, 0));
  ASSERT_TRUE(s.ok()) << s.error();
  const auto kept = table_events(**s);
  ASSERT_EQ(kept.size(), 10u);  // ids 92..101, in commit order
  EXPECT_EQ(kept.front(), submit_line(92));
  EXPECT_EQ(kept.back(), submit_line(101));
  EXPECT_EQ((*s)->load_jobs()->size(), 101u);  // job records are not the events' retention
  EXPECT_EQ(EventLogFile::files(dir.string()).size(), 1u);
  EXPECT_NE(read_file(dir / "events.jsonl").find(submit_line(1)), std::string::npos);
  fs::remove_all(dir);
}

// After a rotation events.jsonl is empty: a lost database is still noticed, and --fresh-store
// continues the ids after the rotated files'.
TEST(SqliteStoreRetention, LostDatabaseSeenAcrossRotation) {
  const auto dir = fresh_dir("lost");
  {
    auto s = SqliteStore::open(dir.string(), small_store(0, 1));  // rotates at every commit
    ASSERT_TRUE(s.ok()) << s.error();
    (*s)->start();
    for (int id = 1; id <= 5; ++id) ASSERT_TRUE(submit(**s, id));
  }
  EXPECT_EQ(fs::file_size(dir / "events.jsonl"), 0u);
  EXPECT_EQ(whole_log(dir), submit_line(3) + "\n" + submit_line(4) + "\n" + submit_line(5) + "\n");
  for (const char* f : {"sluice.db", "sluice.db-wal", "sluice.db-shm"}) fs::remove(dir / f);
  auto refused = SqliteStore::open(dir.string(), small_store(0, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("sluice.db is missing"), std::string::npos) << refused.error();
  StoreOptions fresh = small_store(0, 1);
  fresh.fresh = true;
  auto s = SqliteStore::open(dir.string(), fresh);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ((*s)->get_meta("next_job_id").value_or(""), "6");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sluice::server::event_log_test
