#pragma once
// Routes: method + path pattern -> handler. A pattern without regex syntax matches the path
// exactly (a string compare); one with it is a std::regex that must match the whole path, its
// captures in Request::matches; "*" matches every path, and the method "*" every method. The
// first route registered that matches wins (as in httplib).
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "net/message.h"
#include "net/responder.h"

namespace sluice::net {

using Handler = std::function<void(const Request&, Response&)>;
// Runs on the connection's strand (an I/O thread) and must not block: it answers through the
// Responder, now or later. `req` lives until the answer is written; the handler may move from it.
using AsyncHandler = std::function<void(Request& req, Responder)>;

struct RouteOptions {
  // Served on the I/O thread, never queued for a worker: for cheap, lock-free endpoints
  // (/healthz, /readyz) that must answer while every worker is busy, and on connections over
  // the connection caps (which may ask for nothing else).
  bool run_inline = false;
  // The worker pool it runs on: "" the default one, else one of ServerOptions::lanes.
  std::string lane;
  // A larger request body than ServerOptions::max_body_bytes for this route (0: the server's
  // limit), for bulk uploads from trusted peers (an agent's log), and only to a request that
  // `large_body_allowed(path, Authorization header)` admits, checked with the header on the I/O
  // thread (so: cheap, no long locks). Anyone else keeps the server's limit: a stranger cannot
  // make the server buffer large bodies.
  size_t max_body_bytes = 0;
  std::function<bool(const std::string& path, const std::string& authorization)> large_body_allowed;
};

struct Route {
  std::string method;
  std::string pattern;
  std::optional<std::regex> regex;  // nullopt: exact match
  Handler handler;                  // or
  AsyncHandler async;               // (exactly one is set)
  RouteOptions options;
};

class Router {
 public:
  void add(std::string method, std::string pattern, Handler handler, RouteOptions options = {});
  void add_async(std::string method, std::string pattern, AsyncHandler handler,
                 RouteOptions options = {});
  // The route for this method and path, its captures in `matches` (which refer into `path`:
  // pass the Request's own member). nullptr when none matches. HEAD finds GET routes.
  const Route* find(const std::string& method, const std::string& path, std::smatch& matches) const;
  size_t size() const { return routes_.size(); }
  // The largest RouteOptions::max_body_bytes of any route (0: none raises the limit).
  size_t largest_body_limit() const { return largest_body_limit_; }

 private:
  Route& make(std::string method, std::string pattern, RouteOptions options);

  std::vector<Route> routes_;  // bounded by the code that registers them
  size_t largest_body_limit_ = 0;
};

}  // namespace sluice::net
