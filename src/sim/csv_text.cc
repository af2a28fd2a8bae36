#include "sim/csv_text.h"

namespace sluice::sim {

std::vector<std::string> split_fields(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {  // bounded: each turn moves `start` past one separator
    const size_t at = s.find(sep, start);
    if (at == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, at - start));
    start = at + 1;
  }
}

std::vector<std::string> split_csv(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return split_fields(line, ',');
}

}  // namespace sluice::sim
