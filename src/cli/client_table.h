#pragma once
// Plain-text tables for the client commands (`sluice jobs`, `queues`, `nodes`): column widths
// come from the content, long cells are cut to a per-column cap so one long pending reason does
// not push every other column off the screen. ASCII only, so widths are byte counts.
#include <cstddef>
#include <string>
#include <vector>

#include "cli/client_term.h"  // printable_text: every cell passes it
#include "core/model/duration_text.h"

namespace sluice::cli {

// Cuts text to at most max_width bytes, ending in "..." when something was cut. max_width 0
// means no limit. A cut never splits a UTF-8 sequence (the server's names and reasons may carry
// them); such text may then be a little narrower than max_width.
std::string truncate_text(const std::string& text, std::size_t max_width);

class Table {
 public:
  struct Column {
    std::string header;
    std::size_t max_width = 0;  // 0: as wide as the widest cell
    bool right = false;         // right-aligned (numbers)
  };
  explicit Table(std::vector<Column> columns);

  // A row with fewer cells than columns is padded with empty cells; extra cells are an error
  // of the caller and are dropped.
  void add_row(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }

  // Header line then one line per row, columns separated by two spaces, no trailing spaces.
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // cells already truncated
};

// Seconds from the server as text (core/model/duration_text.h), truncated to whole seconds;
// negative (a clock behind the server's) or not finite prints "0s".
std::string format_duration(double seconds, DurationStyle style = DurationStyle::kTwoUnits);
// Unix seconds as UTC, "2026-12-02T19:04:05Z" (as squeue --start and sacct show a time).
std::string utc_time_text(double unix_s);
// "45s", "12m", "3h", "5d": the largest unit that fits, like kubectl's AGE.
inline std::string format_age(double seconds) {
  return format_duration(seconds, DurationStyle::kLargestUnit);
}

// Milli-units as a short decimal: 16000 -> "16", 500 -> "0.5", 250 -> "0.25".
std::string format_milli(long long milli);

// A ratio as a decimal with up to `digits` decimals, trailing zeros dropped: 0.5 -> "0.5".
std::string format_decimal(double value, int digits);

}  // namespace sluice::cli
