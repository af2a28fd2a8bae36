#include "agent/node_names.h"

#include <charconv>
#include <set>

namespace sluice::agent {
namespace {

constexpr size_t kMaxNames = 4096;

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 9) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool valid_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> expand_node_names(std::string_view spec) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](std::string name) -> bool {
    if (!seen.insert(name).second || out.size() >= kMaxNames) return false;
    out.push_back(std::move(name));
    return true;
  };
  const std::string where = " in node names \"" + std::string(spec) + "\"";
  // 1. Split at commas outside brackets.
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= spec.size(); ++i) {
    if (i == spec.size() || (spec[i] == ',' && depth == 0)) {
      items.push_back(spec.substr(start, i - start));
      start = i + 1;
    } else if (spec[i] == '[') {
      if (++depth > 1) return Error{"nested '['" + where};
    } else if (spec[i] == ']') {
      if (--depth < 0) return Error{"unbalanced ']'" + where};
    }
  }
  if (depth != 0) return Error{"unbalanced '['" + where};
  // 2. Each item: PREFIX[RANGES]SUFFIX or a plain name.
  for (auto item : items) {
    size_t open = item.find('[');
    if (open == std::string_view::npos) {
      if (!valid_name(item)) return Error{"bad name \"" + std::string(item) + "\"" + where};
      if (!add(std::string(item))) return Error{"duplicate or too many names" + where};
      continue;
    }
    size_t close = item.find(']', open);
    std::string_view prefix = item.substr(0, open);
    std::string_view ranges = item.substr(open + 1, close - open - 1);
    std::string_view suffix = item.substr(close + 1);
    if ((!prefix.empty() && !valid_name(prefix)) || (!suffix.empty() && !valid_name(suffix))) {
      return Error{"bad name \"" + std::string(item) + "\"" + where};
    }
    if (ranges.empty()) return Error{"empty [] in \"" + std::string(item) + "\"" + where};
    size_t pos = 0;
    while (pos <= ranges.size()) {
      size_t comma = ranges.find(',', pos);
      if (comma == std::string_view::npos) comma = ranges.size();
      std::string_view r = ranges.substr(pos, comma - pos);
      pos = comma + 1;
      size_t dash = r.find('-');
      std::string_view lo_s = r.substr(0, dash);
      std::string_view hi_s = dash == std::string_view::npos ? lo_s : r.substr(dash + 1);
      uint64_t lo = 0, hi = 0;
      if (!parse_u64(lo_s, lo) || !parse_u64(hi_s, hi) || hi < lo) {
        return Error{"bad range \"" + std::string(r) + "\" (want A or A-B with A <= B)" + where};
      }
      if (hi - lo >= kMaxNames)
        return Error{"range \"" + std::string(r) + "\" is too large" + where};
      const size_t width = lo_s.size() > 1 && lo_s[0] == '0' ? lo_s.size() : 0;
      for (uint64_t n = lo; n <= hi; ++n) {
        std::string num = std::to_string(n);
        if (num.size() < width) num.insert(0, width - num.size(), '0');
        if (!add(std::string(prefix) + num + std::string(suffix))) {
          return Error{"duplicate or too many names" + where};
        }
      }
      if (comma == ranges.size()) break;
    }
  }
  return out;
}

}  // namespace sluice::agent
