#include "cli/client_term.h"

#include <cstdio>

#include "core/config/input_limits.h"

namespace sluice::cli {

std::string escape_for_terminal(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      const bool line_end_cr = c == '\r' && i + 1 < s.size() && s[i + 1] == '\n';
      if ((c >= 0x20 && c != 0x7F) || c == '\n' || c == '\t' || line_end_cr) {
        out += static_cast<char>(c);
      } else {
        out += '^';
        out += static_cast<char>(c == 0x7F ? '?' : c + 0x40);
      }
      ++i;
      continue;
    }
    char32_t cp = 0;
    const size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    } else if (invisible_control(cp)) {
      std::snprintf(buf, sizeof buf, "<U+%04X>", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace sluice::cli
