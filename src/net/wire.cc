#include "net/wire.h"

#include <boost/beast/http/status.hpp>

#include <array>
#include <charconv>
#include <cstdint>

namespace sluice::net {

namespace http = boost::beast::http;

Request to_request(BeastRequest&& msg, const std::string& remote_addr, int remote_port) {
  Request req;
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  const auto q = req.target.find('?');
  req.path = percent_decode(std::string_view(req.target).substr(0, q), false);
  if (q != std::string::npos) req.params = parse_query(std::string_view(req.target).substr(q + 1));
  req.headers.reserve(8);
  for (const auto& f : msg) req.headers.emplace_back(f.name_string(), f.value());
  req.body = std::move(msg.body());
  req.remote_addr = remote_addr;
  req.remote_port = remote_port;
  req.version = msg.version() == 10 ? 10 : 11;
  return req;
}

namespace {

// Per byte: 1 = may be in a header name (a token, RFC 9110 5.6.2), 2 = may be in a value (not
// CR, LF or NUL). One table lookup per character on the hot path.
constexpr std::array<uint8_t, 256> kHeaderChars = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    if (c != '\r' && c != '\n' && c != 0) t[c] |= 2;
    const bool token =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (token) t[c] |= 1;
  }
  return t;
}();

bool all_chars(std::string_view s, uint8_t kind) {
  for (const char c : s)
    if (!(kHeaderChars[static_cast<unsigned char>(c)] & kind)) return false;
  return true;
}

bool clean_value(std::string_view v) {
  return all_chars(v, 2);
}

bool clean_name(std::string_view n) {
  return !n.empty() && all_chars(n, 1);
}

// Framing and connection management are the server's to write.
bool is_framing(std::string_view n) {
  switch (n.size()) {  // by length first: most names are rejected on it
    case 10:
      return iequals(n, "Connection");
    case 14:
      return iequals(n, "Content-Length");
    case 17:
      return iequals(n, "Transfer-Encoding");
    default:
      return false;
  }
}

void append_number(std::string& out, size_t n) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, r.ptr);
}

}  // namespace

void serialize_response_head(const Response& res, unsigned version, bool keep_alive,
                             bool head_request, std::string& out, bool chunked) {
  const int status = res.status >= 100 && res.status <= 999 ? res.status : 500;
  out.clear();
  out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  append_number(out, static_cast<size_t>(status));
  out += ' ';
  out += http::obsolete_reason(static_cast<http::status>(status));
  out += "\r\n";
  if (!res.content_type.empty() && clean_value(res.content_type)) {
    out += "Content-Type: ";
    out += res.content_type;
    out += "\r\n";
  }
  for (const auto& [k, v] : res.headers) {
    if (!clean_name(k) || !clean_value(v) || is_framing(k)) continue;
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (status >= 200 && status != 204 && status != 304) {
    out += "Content-Length: ";
    append_number(out,
                  head_request ? res.content_length.value_or(res.body.size()) : res.body.size());
    out += "\r\n";
  }
  if (!keep_alive && version >= 11) out += "Connection: close\r\n";
  if (keep_alive && version == 10) out += "Connection: keep-alive\r\n";
  out += "\r\n";
}

std::string chunk_frame(std::string_view data) {
  if (data.empty()) return "0\r\n\r\n";
  static const char* kHex = "0123456789abcdef";
  std::string size;
  for (size_t n = data.size(); n > 0; n >>= 4) size.insert(size.begin(), kHex[n & 15]);
  std::string out;
  out.reserve(size.size() + data.size() + 4);
  out += size;
  out += "\r\n";
  out += data;
  out += "\r\n";
  return out;
}

}  // namespace sluice::net
