#pragma once
// JSON written by hand into a string, for the records the server writes at every job's
// submission, start and end (building an nlohmann object per record was a seventh of the
// server's CPU at a thousand jobs a second). Readers parse it back with nlohmann.
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sluice::server::json_text {

// Appends `v` as a JSON string. ASCII is escaped here; anything else goes through nlohmann,
// which replaces invalid UTF-8 rather than writing a record that would not parse back.
inline void str(std::string& out, std::string_view v) {
  for (char c : v)
    if (static_cast<unsigned char>(c) >= 0x80) {
      out += nlohmann::json(std::string(v))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  out += '"';
  for (char c : v) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// ,"key": (first: "key": without the comma)
inline void key(std::string& out, std::string_view k, bool first = false) {
  out += first ? "\"" : ",\"";
  out += k;
  out += "\":";
}

inline void num(std::string& out, int64_t v) {
  out += std::to_string(v);
}

inline void boolean(std::string& out, bool v) {
  out += v ? "true" : "false";
}

}  // namespace sluice::server::json_text
