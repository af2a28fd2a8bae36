#pragma once
// The HTTP/JSON plumbing every client command shares: which server, which token, one request,
// and what a failure looks like to the user. Failures are returned (house rule 8); the command
// layer prints them and picks the exit code.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sluice::net {
class Client;
}

namespace sluice::cli {

constexpr const char* kDefaultServer = "http://127.0.0.1:7070";

struct Connection {
  // "http://host:port"; "host:port" gets http:// added. Replicas (docs/ha.md): several, comma-
  // separated; a request goes to the one that leads.
  std::string server = kDefaultServer;
  std::string token;  // sent as "Authorization: Bearer <token>" when set
  int connect_timeout_s = 5;
  int read_timeout_s = 60;  // logs and explanations may take the server a moment
};

// A reply the server gave (any status).
struct HttpReply {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string retry_after;  // the Retry-After header, when there is one
  std::string log_size;     // X-Sluice-Log-Size: a pod log's size in bytes (GET .../logs)
};

// Why a command failed. Exit codes: 1 the server refused or failed the request (its message is
// in `message`), 2 no usable reply at all (cannot connect, timed out, bad URL).
struct ClientFailure {
  int exit_code = 1;
  std::string message;  // the text for stderr, possibly several lines, no trailing newline
};

// A reply or a failure; small on purpose (Result<T> carries only a string).
template <class T>
struct Outcome {
  T value{};
  ClientFailure failure{};
  bool ok = false;
  static Outcome success(T v) { return Outcome{std::move(v), {}, true}; }
  static Outcome fail(ClientFailure f) { return Outcome{{}, std::move(f), false}; }
};

// "127.0.0.1:7070" -> "http://127.0.0.1:7070"; a trailing '/' is dropped. Failure when the URL
// is not http(s)://host[:port] (the server has no path prefix).
Outcome<std::string> normalize_server_url(const std::string& url);

// Turns a non-2xx reply into the user's message: "error: HTTP 404: unknown queue ..." followed by
// the server's details, one per line, and hints for 401/403/429 (Retry-After).
ClientFailure describe_http_error(const HttpReply& reply, const std::string& server);

class HttpClient {
 public:
  explicit HttpClient(Connection connection) : conn_(std::move(connection)) {}

  // One request. Failure only for transport problems (exit 2); any HTTP status is a reply.
  // query is appended as given ("state=pending&limit=10", already escaped).
  Outcome<HttpReply> request(const std::string& method, const std::string& path,
                             const std::string& body = "",
                             const std::string& content_type = "application/json") const;

  // request() that also fails on a non-2xx status (exit 1, the server's message).
  Outcome<HttpReply> call(const std::string& method, const std::string& path,
                          const std::string& body = "",
                          const std::string& content_type = "application/json") const;

  // call() whose 2xx body must be JSON.
  Outcome<nlohmann::json> call_json(const std::string& method, const std::string& path,
                                    const std::string& body = "",
                                    const std::string& content_type = "application/json") const;

  const Connection& connection() const { return conn_; }

 private:
  Outcome<HttpReply> request_one(const std::string& server, const std::string& method,
                                 const std::string& path, const std::string& body,
                                 const std::string& content_type) const;
  net::Client& client_for(const std::string& url) const;
  // Several servers, before the first request: which one to ask first (see the .cc).
  void find_leader(const std::vector<std::string>& servers) const;

  Connection conn_;
  mutable size_t leader_ = 0;          // index of the server that answered last
  mutable bool leader_found_ = false;  // find_leader() ran
  // Kept-alive connections by server URL. A copy starts without any: it may go to another
  // thread, and a net::Client is used by one thread at a time.
  struct Clients {
    std::map<std::string, std::shared_ptr<net::Client>> by_url;
    Clients() = default;
    Clients(const Clients&) {}
    Clients& operator=(const Clients&) {
      by_url.clear();
      return *this;
    }
  };
  mutable Clients clients_;
};

// Percent-encodes a query value (RFC 3986 unreserved characters pass through).
std::string url_encode(const std::string& value);
// The user running this client (its passwd name, else "uid-N"): a server without tokens takes
// it as the submitter (X-Sluice-User).
std::string local_user_name();

}  // namespace sluice::cli
