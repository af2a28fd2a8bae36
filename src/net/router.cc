#include "net/router.h"

#include <algorithm>

namespace sluice::net {

namespace {
bool is_literal(const std::string& pattern) {
  return pattern.find_first_of("()[]{}*+?.^$|\\") == std::string::npos;
}
}  // namespace

void Router::add(std::string method, std::string pattern, Handler handler, RouteOptions options) {
  Route r;
  r.method = std::move(method);
  if (!is_literal(pattern)) r.regex.emplace(pattern, std::regex::ECMAScript);
  r.pattern = std::move(pattern);
  r.handler = std::move(handler);
  r.options = options;
  largest_body_limit_ = std::max(largest_body_limit_, options.max_body_bytes);
  routes_.push_back(std::move(r));
}

const Route* Router::find(const std::string& method, const std::string& path,
                          std::smatch& matches) const {
  const std::string_view want = method == "HEAD" ? std::string_view("GET") : method;
  for (const auto& r : routes_) {
    if (r.method != want) continue;
    if (!r.regex) {
      if (r.pattern == path) {
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
