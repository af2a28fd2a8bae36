#include "cli/client_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace sluice::cli {

namespace {
constexpr std::string_view kEllipsis = "...";
constexpr std::string_view kGap = "  ";

// True for the second and later bytes of a UTF-8 sequence.
bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}
}  // namespace

std::string truncate_text(const std::string& text, std::size_t max_width) {
  if (max_width == 0 || text.size() <= max_width) return text;
  if (max_width <= kEllipsis.size()) return std::string(kEllipsis.substr(0, max_width));
  std::size_t keep = max_width - kEllipsis.size();
  // Step back to the start of a UTF-8 sequence so the cut is still valid text.
  while (keep > 0 && is_continuation(text[keep])) --keep;
  std::string out = text.substr(0, keep);
  out += kEllipsis;
  return out;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    cells[i] = truncate_text(printable_text(cells[i]), columns_[i].max_width);
  }
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  // 1. Widths: the widest of the header and every (already truncated) cell.
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) width[i] = columns_[i].header.size();
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());

  // 2. Lines: pad every cell but the last one of a left-aligned last column; strip trailing
  // spaces so the output diffs cleanly.
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) line += kGap;
      std::size_t pad = width[i] - cells[i].size();
      if (columns_[i].right) line.append(pad, ' ');
      line += cells[i];
      if (!columns_[i].right) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  std::vector<std::string> header;
  for (const auto& c : columns_) header.push_back(c.header);
  emit(header);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string utc_time_text(double unix_s) {
  if (!std::isfinite(unix_s) || unix_s < 0 || unix_s > 1e11) return "?";
  const auto secs = static_cast<std::time_t>(std::llround(unix_s));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_duration(double seconds, DurationStyle style) {
  if (!std::isfinite(seconds) || seconds < 0) return "0s";
  // Beyond a million years it is a bad clock, not a duration (and int64_t would overflow).
  return duration_text(static_cast<int64_t>(std::min(seconds, 3.2e13)), style);
}

std::string format_decimal(double value, int digits) {
  if (!std::isfinite(value)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", std::clamp(digits, 0, 9), value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string format_milli(long long milli) {
  return format_decimal(static_cast<double>(milli) / 1000.0, 3);
}

}  // namespace sluice::cli
