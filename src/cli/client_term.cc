#include "cli/client_term.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "config/input_limits.h"

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

std::string printable_text(std::string_view text) {
  std::string flat(text);
  for (char& c : flat)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return escape_for_terminal(flat);
}

std::string terminal_text(std::string_view text, bool terminal) {
  return terminal ? escape_for_terminal(text) : std::string(text);
}

void print_out(std::string_view text) {
  std::cout << terminal_text(text, ::isatty(STDOUT_FILENO) == 1) << std::flush;
}

void print_err(std::string_view text) {
  std::cerr << terminal_text(text, ::isatty(STDERR_FILENO) == 1);
}

}  // namespace sluice::cli
