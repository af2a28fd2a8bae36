#include "net/router.h"

#include <algorithm>

namespace sluice::net {

namespace {
bool is_literal(const std::string& pattern) {
  return pattern.find_first_of("()[]{}*+?.^$|\\") == std::string::npos;
}
}  // namespace

Route& Router::make(std::string method, std::string pattern, RouteOptions options) {
  Route& r = routes_.emplace_back();
  r.method = std::move(method);
  if (pattern != "*" && !is_literal(pattern)) r.regex.emplace(pattern, std::regex::ECMAScript);
  r.pattern = std::move(pattern);
  r.options = options;
  largest_body_limit_ = std::max(largest_body_limit_, options.max_body_bytes);
  return r;
}

void Router::add(std::string method, std::string pattern, Handler handler, RouteOptions options) {
  make(std::move(method), std::move(pattern), options).handler = std::move(handler);
}

void Router::add_async(std::string method, std::string pattern, AsyncHandler handler,
                       RouteOptions options) {
  make(std::move(method), std::move(pattern), options).async = std::move(handler);
}

const Route* Router::find(const std::string& method, const std::string& path,
                          std::smatch& matches) const {
  const std::string_view want = method == "HEAD" ? std::string_view("GET") : method;
  for (const auto& r : routes_) {
    if (r.method != want && r.method != "*" && r.method != method) continue;
    if (!r.regex) {
      if (r.pattern == path || r.pattern == "*") {
        matches = std::smatch();
        return &r;
      }
      continue;
    }
    if (std::regex_match(path, matches, *r.regex)) return &r;
  }
  matches = std::smatch();
  return nullptr;
}

}  // namespace sluice::net
