#include "server/event_log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace sluice::server {

namespace {

constexpr const char* kName = "events.jsonl";

// The generation a file name in the data directory stands for: 0 for events.jsonl, n for
// events.jsonl.n; -1 for any other name.
int generation_of(const std::string& name) {
  const std::string base = kName;
  if (name == base) return 0;
  if (name.size() <= base.size() + 1 || name.compare(0, base.size() + 1, base + ".") != 0)
    return -1;
  int n = 0;
  for (size_t i = base.size() + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > 100'000) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n > 0 ? n : -1;
}

// The log's files in DIR as (generation, path), newest first. A directory listing rather than
// a walk from .1 up: a crash between two renames of a rotation may leave a gap.
std::vector<std::pair<int, std::string>> generations(const std::string& dir) {
  std::vector<std::pair<int, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const int g = generation_of(e.path().filename().string());
    if (g >= 0) out.emplace_back(g, e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The highest `"id":N` in one file.
uint64_t max_id_in(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  uint64_t best = 0;
  char buf[1 << 16];
  std::string carry;
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    std::string text = carry + std::string(buf, n);
    size_t pos = 0;
    while ((pos = text.find("\"id\":", pos)) != std::string::npos) {
      pos += 5;
      uint64_t v = 0;
      size_t d = pos;
      while (d < text.size() && d - pos < 19 && text[d] >= '0' && text[d] <= '9')
        v = v * 10 + static_cast<uint64_t>(text[d++] - '0');
      best = std::max(best, v);
    }
    carry = text.size() > 32 ? text.substr(text.size() - 32) : text;
  }
  std::fclose(f);
  return best;
}

}  // namespace

Result<std::unique_ptr<EventLogFile>> EventLogFile::open(const std::string& dir,
                                                         EventLogOptions options) {
  std::unique_ptr<EventLogFile> log(new EventLogFile());
  log->dir_ = dir;
  log->options_ = options;
  log->options_.keep = std::max(options.keep, 1);
  if (!log->reopen())
    return Error{"cannot open " + log->path(0) + " for appending: " + std::strerror(errno)};
  return log;
}

EventLogFile::~EventLogFile() {
  if (f_) std::fclose(f_);
}

std::string EventLogFile::path(int generation) const {
  return dir_ + "/" + kName + (generation > 0 ? "." + std::to_string(generation) : "");
}

bool EventLogFile::reopen() {
  const std::string p = path(0);
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::fchmod(fd, 0600);  // an older server's file was 0644
  struct stat st {};
  bytes_ = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  f_ = ::fdopen(fd, "a");
  if (!f_) ::close(fd);
  return f_ != nullptr;
}

void EventLogFile::append(const std::string& line) {
  if (!f_) return;
  std::fputs(line.c_str(), f_);
  std::fputc('\n', f_);
  bytes_ += line.size() + 1;
}

void EventLogFile::flush() {
  if (f_) std::fflush(f_);
  if (options_.max_bytes > 0 && bytes_ >= options_.max_bytes) rotate();
}

// 1. Delete the generations from KEEP up (KEEP is the oldest kept, about to be overwritten;
//    beyond it: left by a larger keep earlier). 2. Shift each kept generation up by one,
//    oldest first, events.jsonl last. 3. Start a new events.jsonl. A rename that fails leaves
//    the file where it was; the next flush tries again.
void EventLogFile::rotate() {
  std::fclose(f_);
  f_ = nullptr;
  for (const auto& [g, p] : generations(dir_))
    if (g >= options_.keep) ::unlink(p.c_str());
  for (int g = options_.keep - 1; g >= 0; --g) ::rename(path(g).c_str(), path(g + 1).c_str());
  reopen();
}

std::vector<std::string> EventLogFile::files(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& [g, p] : generations(dir)) out.push_back(std::move(p));
  return out;
}

bool EventLogFile::has_records(const std::string& dir) {
  struct stat st {};
  for (const auto& p : files(dir))
    if (::stat(p.c_str(), &st) == 0 && st.st_size > 0) return true;
  return false;
}

uint64_t EventLogFile::max_job_id(const std::string& dir) {
  uint64_t best = 0;
  for (const auto& p : files(dir)) best = std::max(best, max_id_in(p));
  return best;
}

}  // namespace sluice::server
