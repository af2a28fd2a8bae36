#pragma once
// Which part of a pod's log one answer carries (`sluice logs`, docs/cli.md). A log longer than
// the answer's cap is never cut silently: the answer keeps its head and its end, each cut at a
// line boundary, with a line "[... N bytes cut ...]" between them. A tail starts on a line
// boundary too, after such a line. Following a log reads raw bytes from an offset.
#include <cstdint>
#include <optional>
#include <string>

namespace sluice::agent {

struct LogView {
  int64_t tail_bytes = 0;  // > 0: only the end, this many bytes at most
  int64_t offset = -1;     // >= 0: the bytes from here on, unmarked (up to max_bytes)
  int64_t max_bytes = 0;   // the answer's cap (> 0)
};

struct LogText {
  std::string text;
  int64_t size = 0;  // the file's size when it was read
};

// The marker line for `cut` bytes left out.
std::string cut_marker(int64_t cut);

// The view of the file at `path`; nullopt when it cannot be opened.
std::optional<LogText> read_log(const std::string& path, const LogView& view);

}  // namespace sluice::agent
