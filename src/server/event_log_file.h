#pragma once
// DIR/events.jsonl: the job event log as a file, for people and tools (`sluice sim run` replays
// the sluice-events format), mirrored from the events the store committed. Rotated by size:
// events.jsonl -> events.jsonl.1 -> ... -> events.jsonl.KEEP, the oldest deleted, so the log
// takes at most (KEEP + 1) x max_bytes (plus one batch) of disk. The database's events table
// is the durable copy (the job history is rebuilt from it): this file is flushed, not fsynced.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace sluice::server {

struct EventLogOptions {
  // events.jsonl is rotated once it holds this many bytes (0: never rotated).
  uint64_t max_bytes = uint64_t{64} << 20;
  // Rotated files kept (events.jsonl.1 the newest); the oldest beyond them is deleted.
  int keep = 4;
};

class EventLogFile {
 public:
  // Opens (creating, 0600) DIR/events.jsonl for appending.
  static Result<std::unique_ptr<EventLogFile>> open(const std::string& dir,
                                                    EventLogOptions options);
  ~EventLogFile();
  EventLogFile(const EventLogFile&) = delete;
  EventLogFile& operator=(const EventLogFile&) = delete;

  void append(const std::string& line);
  // Flushes what was appended, then rotates when the file reached max_bytes: a batch's lines
  // stay in one file.
  void flush();

  // The log's files that exist, newest first: DIR/events.jsonl, DIR/events.jsonl.1, ...
  static std::vector<std::string> files(const std::string& dir);
  // Whether any of them holds a line (an empty database beside them was lost).
  static bool has_records(const std::string& dir);
  // The highest job id any of their lines names (`"id":N`), 0 when none: ids after a lost
  // database continue from there. Every file is read: the newest may hold only the ends of
  // older jobs.
  static uint64_t max_job_id(const std::string& dir);

 private:
  EventLogFile() = default;
  bool reopen();
  void rotate();
  std::string path(int generation) const;  // 0: events.jsonl; n: events.jsonl.n

  std::string dir_;
  EventLogOptions options_;
  FILE* f_ = nullptr;
  uint64_t bytes_ = 0;  // in the current file
};

}  // namespace sluice::server
