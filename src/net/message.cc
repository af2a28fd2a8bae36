#include "net/message.h"

#include <cctype>

#include <nlohmann/json.hpp>

namespace sluice::net {

namespace {
// ASCII only, as header names are (std::tolower consults the locale on every character).
unsigned char ascii_lower(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<unsigned char>(c + ('a' - 'A')) : c;
}
}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(static_cast<unsigned char>(a[i])) !=
        ascii_lower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

namespace {

std::string nth_field(const Fields& fields, std::string_view name, size_t id, bool fold_case) {
  for (const auto& [k, v] : fields) {
    if (!(fold_case ? iequals(k, name) : k == name)) continue;
    if (id == 0) return v;
    --id;
  }
  return {};
}

bool has_field(const Fields& fields, std::string_view name, bool fold_case) {
  for (const auto& [k, v] : fields)
    if (fold_case ? iequals(k, name) : k == name) return true;
  return false;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool Request::has_header(std::string_view name) const {
  return has_field(headers, name, true);
}
std::string Request::get_header_value(std::string_view name, size_t id) const {
  return nth_field(headers, name, id, true);
}
bool Request::has_param(std::string_view key) const {
  return has_field(params, key, false);
}
std::string Request::get_param_value(std::string_view key, size_t id) const {
  return nth_field(params, key, id, false);
}

void Response::set_content(std::string content, std::string type) {
  body = std::move(content);
  content_type = std::move(type);
}

void Response::set_header(std::string name, std::string value) {
  if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
      iequals(name, "Connection"))
    return;
  // A header value must not end the header block early (CR/LF injection from handler data).
  if (name.find_first_of("\r\n:") != std::string::npos ||
      value.find_first_of("\r\n") != std::string::npos)
    return;
  if (iequals(name, "Content-Type")) {
    content_type = std::move(value);
    return;
  }
  headers.emplace_back(std::move(name), std::move(value));
}

std::string_view Request::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return {};
}

std::string Response::get_header_value(std::string_view name) const {
  if (iequals(name, "Content-Type")) return content_type;
  return nth_field(headers, name, 0, true);
}

std::string error_json(std::string_view error, const std::vector<std::string>& details) {
  // Handler data may hold invalid UTF-8 (a path echoed back): replace it rather than throw.
  return nlohmann::json{{"error", error}, {"details", details}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void set_error(Response& res, int status, std::string_view error,
               const std::vector<std::string>& details) {
  res.status = status;
  res.set_content(error_json(error, details), "application/json");
}

std::string percent_decode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+' && plus_is_space) {
      out += ' ';
    } else if (c == '%' && i + 2 < in.size() && hex_value(in[i + 1]) >= 0 &&
               hex_value(in[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(in[i + 1]) * 16 + hex_value(in[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Fields parse_query(std::string_view query) {
  Fields out;
  size_t start = 0;
  // One pass over the string: the number of pairs is bounded by its length.
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view pair = query.substr(start, end - start);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      const std::string_view k = pair.substr(0, eq);
      const std::string_view v = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
      out.emplace_back(percent_decode(k, true), percent_decode(v, true));
    }
    start = end + 1;
  }
  return out;
}

namespace {

// "host:port" of an origin or Host value, lower case, with the scheme's port made explicit
// ("http://a" -> "a:80", Host "a" -> "a:80"); "" for an origin that is not http(s)://authority.
std::string authority_of(std::string_view value, std::string_view scheme) {
  std::string out;
  for (char c : value) out += static_cast<char>(ascii_lower(static_cast<unsigned char>(c)));
  const bool bracketed = !out.empty() && out.front() == '[';  // [::1]:7070
  const auto colon = out.rfind(':');
  const bool has_port = colon != std::string::npos && (!bracketed || out[colon - 1] == ']');
  if (!has_port) out += scheme == "https" ? ":443" : ":80";
  return out;
}

}  // namespace

bool cross_origin(const Request& req) {
  if (!req.has_header("Origin")) return false;
  const std::string_view origin = req.header("Origin");
  const auto sep = origin.find("://");
  if (sep == std::string_view::npos) return true;  // "null", or not an origin at all
  const std::string_view scheme = origin.substr(0, sep);
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return true;
  const std::string_view rest = origin.substr(sep + 3);
  if (rest.empty() || rest.find('/') != std::string_view::npos) return true;
  const std::string lower_scheme = iequals(scheme, "https") ? "https" : "http";
  const std::string_view host = req.header("Host");
  return host.empty() || authority_of(rest, lower_scheme) != authority_of(host, lower_scheme);
}

}  // namespace sluice::net
