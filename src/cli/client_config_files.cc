#include "cli/client_config_files.h"

#include <algorithm>
#include <regex>

#include "config/loader.h"

namespace sluice::cli {

JoinedFiles join_files(const std::vector<std::pair<std::string, std::string>>& files) {
  JoinedFiles out;
  int line = 1;  // the body's line the next text starts on
  for (const auto& [name, text] : files) {
    if (!out.body.empty()) {
      if (out.body.back() != '\n') {
        out.body += '\n';
        ++line;
      }
      out.body += "---\n";
      ++line;
    }
    out.starts.emplace_back(line, name);
    out.body += text;
    line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  return out;
}

std::string JoinedFiles::cite(const std::string& text) const {
  static const std::regex kRequestLine(R"(\brequest:(\d{1,9})\b)");
  std::string out;
  auto it = std::sregex_iterator(text.begin(), text.end(), kRequestLine);
  size_t last = 0;
  for (; it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    const int line = std::stoi(m[1].str());
    // The last file that starts at or before that line.
    const std::pair<int, std::string>* file = nullptr;
    for (const auto& s : starts)
      if (s.first <= line) file = &s;
    out += text.substr(last, static_cast<size_t>(m.position()) - last);
    out += file ? file->second + ":" + std::to_string(line - file->first + 1) : m.str();
    last = static_cast<size_t>(m.position() + m.length());
  }
  return out + text.substr(last);
}

Result<JoinedFiles> read_and_join(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& p : paths) {
    auto read = read_source(p);
    if (!read) return Error{read.error()};
    files.emplace_back(p, std::move(read->text));
  }
  return join_files(files);
}

}  // namespace sluice::cli
