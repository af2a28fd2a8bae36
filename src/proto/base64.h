#pragma once
// Base64 (RFC 4648, with padding) for bytes that travel in JSON strings: etcd's keys and values,
// a terminal's keystrokes (TtyInput). JSON strings must be UTF-8; these need not be.
#include <cstdint>
#include <string>

namespace sluice::proto {

inline std::string base64_encode(const std::string& raw) {
  static constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < raw.size(); i += 3) {
    const uint32_t v = (uint32_t(uint8_t(raw[i])) << 16) | (uint32_t(uint8_t(raw[i + 1])) << 8) |
                       uint8_t(raw[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (i < raw.size()) {
    const bool two = i + 1 < raw.size();
    const uint32_t v =
        (uint32_t(uint8_t(raw[i])) << 16) | (two ? uint32_t(uint8_t(raw[i + 1])) << 8 : 0);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += two ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Empty on malformed input (a character outside the alphabet before the padding).
inline std::string base64_decode(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) return {};
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace sluice::proto
