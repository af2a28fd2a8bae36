#pragma once
// "a,b,,c" -> {"a", "b", "c"}: the non-empty parts of a list in one string (server URLs, query
// values, etcd endpoints). Shared by the server, the agent and the CLI.
#include <string>
#include <vector>

namespace sluice::proto {

inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace sluice::proto
