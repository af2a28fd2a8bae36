#pragma once
// Request and Response as handlers see them. The names follow cpp-httplib's (get_header_value,
// has_param, get_param_value, matches, set_content), so that code written against httplib moves
// to this stack by changing types, not logic.
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::net {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded, without the query
  std::string body;
  Fields headers;       // in arrival order; names compared case-insensitively
  Fields params;        // query parameters, percent-decoded, in arrival order
  std::smatch matches;  // the route's regex captures, into `path` (a Request is not copied)
  std::string remote_addr;
  int remote_port = 0;
  unsigned version = 11;  // 10 or 11: HTTP/1.0 or HTTP/1.1

  bool has_header(std::string_view name) const;
  // The first value of header `name` (case-insensitive), a view into `headers`; "" when none.
  std::string_view header(std::string_view name) const;
  // The id-th value of header `name` (case-insensitive), or "" when there is none.
  std::string get_header_value(std::string_view name, size_t id = 0) const;
  bool has_param(std::string_view key) const;
  // The id-th value of query parameter `key`, or "" when there is none.
  std::string get_param_value(std::string_view key, size_t id = 0) const;
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type;  // empty: no Content-Type header
  Fields headers;            // extra headers, sent as given
  // The Content-Length of an answer to HEAD that carries no body (a proxy relaying the length
  // a GET would have had); otherwise the body's size is sent.
  std::optional<size_t> content_length;

  void set_content(std::string content, std::string type);
  // Adds a header (a second call with the same name adds a second line, as httplib does).
  // Content-Length, Transfer-Encoding and Connection are the server's to set and are ignored.
  void set_header(std::string name, std::string value);
  std::string get_header_value(std::string_view name) const;
};

// The body of every error the stack writes itself, and the shape handlers use too:
// {"error": "...", "details": [...]}.
std::string error_json(std::string_view error, const std::vector<std::string>& details = {});
void set_error(Response& res, int status, std::string_view error,
               const std::vector<std::string>& details = {});

// Query-string and path decoding. `plus_is_space`: '+' means ' ' in a query, not in a path.
// Malformed escapes ("%zz", a trailing '%') are kept as they are.
std::string percent_decode(std::string_view in, bool plus_is_space);
Fields parse_query(std::string_view query);

bool iequals(std::string_view a, std::string_view b);

// Whether a browser sent this request from a page of another origin: it carries an Origin header
// ("null" included) whose host and port are not its Host header's. A request without Origin (curl,
// kubectl, the CLI, agents) is not. A browser page cannot leave Origin out of a POST, PUT, PATCH
// or DELETE, so refusing cross-origin writes stops another site's page from acting through a
// user's browser (a server without tokens takes every caller as its admin).
bool cross_origin(const Request& req);

}  // namespace sluice::net
