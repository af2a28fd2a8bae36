#include "agent/log_slice.h"

#include <algorithm>
#include <fstream>

namespace sluice::agent {

namespace {

std::string read_at(std::ifstream& in, int64_t from, int64_t n) {
  std::string data(static_cast<size_t>(std::max<int64_t>(n, 0)), '\0');
  in.clear();
  in.seekg(from);
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return data;
}

// A head ends after its last newline; a tail starts after its first (when they have one, so a
// log without newlines is still shown).
void to_line_end(std::string& head) {
  const auto nl = head.rfind('\n');
  if (nl != std::string::npos) head.resize(nl + 1);
}
void from_line_start(std::string& tail) {
  const auto nl = tail.find('\n');
  if (nl != std::string::npos && nl + 1 < tail.size()) tail.erase(0, nl + 1);
}

}  // namespace

std::string cut_marker(int64_t cut) {
  return "[... " + std::to_string(cut) + " bytes cut ...]\n";
}

std::optional<LogText> read_log(const std::string& path, const LogView& view) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  LogText out;
  out.size = static_cast<int64_t>(in.tellg());
  const int64_t cap = std::max<int64_t>(view.max_bytes, 1);
  // 1. Following: raw bytes from the offset (the next answer goes on from out.size).
  if (view.offset >= 0) {
    const int64_t from = std::min(view.offset, out.size);
    out.text = read_at(in, from, std::min(out.size - from, cap));
    out.size = from + static_cast<int64_t>(out.text.size());
    return out;
  }
  // 2. A tail: the last bytes, from a line start, marked when something was left out.
  const int64_t want = view.tail_bytes > 0 ? std::min(view.tail_bytes, cap) : cap;
  if (out.size <= want) {
    out.text = read_at(in, 0, out.size);
    return out;
  }
  if (view.tail_bytes > 0) {
    std::string tail = read_at(in, out.size - want, want);
    from_line_start(tail);
    out.text = cut_marker(out.size - static_cast<int64_t>(tail.size())) + tail;
    return out;
  }
  // 3. The whole log past the cap: a quarter of it for the head, the rest for the end.
  std::string head = read_at(in, 0, cap / 4);
  to_line_end(head);
  const int64_t tail_n = cap - static_cast<int64_t>(head.size());
  std::string tail = read_at(in, out.size - tail_n, tail_n);
  from_line_start(tail);
  const int64_t cut = out.size - static_cast<int64_t>(head.size() + tail.size());
  if (!head.empty() && head.back() != '\n') head += '\n';
  out.text = head + cut_marker(cut) + tail;
  return out;
}

}  // namespace sluice::agent
