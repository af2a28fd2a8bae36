#pragma once
// The one HTTP/1.1 client of sluice (the CLI, the agent -> server, the server -> etcd, the OTLP
// exporter, the leader probes). Synchronous, Boost.Asio/Beast on a private io_context:
//
//   - per-request deadlines: connect, write, and read (the longest wait for the next bytes of
//     the answer: a long poll sets it past its wait; a slow large body is not cut off while it
//     keeps arriving).
//   - keep-alive: the connection is kept and reused by the next request (a stale one, closed by
//     the server while idle, is noticed before the request goes out, and a request that fails
//     on a reused connection before any answer byte is sent once more on a fresh one).
//   - bounded: an answer's body is read up to ClientOptions::max_body_bytes (an error beyond),
//     or handed over piece by piece as it arrives (a streaming read: on_body).
//   - http and https (OpenSSL: the system's CAs, the host name verified); IPv6 as http://[::1]:80.
//   - one thread makes requests on a Client at a time; cancel() may be called from any thread and
//     ends the request in flight (a long poll) with ClientError::kCanceled.
//
//   net::Client cli("http://127.0.0.1:7070", {.read_timeout = std::chrono::seconds(30)});
//   auto res = cli.post("/v1/jobs", body, "application/yaml", {{"Authorization", "Bearer t"}});
//   if (!res) print(res.error_text());  // "cannot connect to 127.0.0.1:7070: Connection refused"
//   else if (res->status == 202) print(res->body, res->get_header_value("Location"));
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "net/message.h"

namespace sluice::net {

// [scheme://]HOST[:PORT][/...] taken apart (no scheme: http); HOST without an IPv6 literal's
// brackets.
struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;
  std::string port;  // the default of the scheme when the URL names none
  // "HOST:PORT", with brackets around an IPv6 literal (a Host header, a message).
  std::string authority() const;
};
// None when `url` is not [http(s)://]HOST[:PORT][/...] (another scheme, no host, a port that is
// not a number).
std::optional<Url> parse_url(std::string_view url);

struct ClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds read_timeout{10000};
  bool keep_alive = true;  // false: one connection per request
  uint64_t max_body_bytes = uint64_t{2} << 30;
};

enum class ClientError {
  kNone,
  kBadUrl,      // the client's URL is not http(s)://HOST[:PORT]
  kConnection,  // no connection: the name did not resolve, refused, unreachable, timed out
  kTimeout,     // connected, but the request or its answer missed its deadline
  kWrite,       // the connection failed while the request was written
  kRead,        // ... while the answer was read, or the answer is not HTTP
  kTooLarge,    // the body is over max_body_bytes
  kCanceled,    // cancel(), or on_body returned false
};

struct ClientReply {
  int status = 0;
  Fields headers;    // in arrival order
  std::string body;  // empty after a streaming read (on_body had it)
  // The first value of header `name` (case-insensitive); "" when there is none.
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

// A request's outcome: the reply (res->status, res->body), or why none came (!res).
class ClientResult {
 public:
  ClientResult() = default;
  explicit ClientResult(ClientReply reply) : reply_(std::move(reply)) {}
  ClientResult(ClientError error, std::string text) : error_(error), text_(std::move(text)) {}
  explicit operator bool() const { return error_ == ClientError::kNone; }
  const ClientReply* operator->() const { return &reply_; }
  const ClientReply& operator*() const { return reply_; }
  ClientReply& reply() { return reply_; }
  ClientError error() const { return error_; }
  // What went wrong, for a message: "cannot connect to 127.0.0.1:1: Connection refused".
  const std::string& error_text() const { return text_; }
  // kConnection because the server's machine refused it (nothing listens on the port), not a
  // timeout, no route or a name that does not resolve.
  bool refused() const { return refused_; }
  void set_refused() { refused_ = true; }

 private:
  ClientError error_ = ClientError::kNone;
  bool refused_ = false;
  std::string text_;
  ClientReply reply_;
};

// Called with each piece of the body as it arrives; false stops the read (kCanceled).
using BodySink = std::function<bool(std::string_view)>;

class Client {
 public:
  // base_url: scheme://HOST[:PORT] (a path after it is ignored). A bad one is reported by every
  // request (kBadUrl) and by valid().
  explicit Client(const std::string& base_url, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool valid() const { return url_.has_value(); }
  const std::string& base_url() const { return base_url_; }
  ClientOptions& options() { return options_; }  // between requests only

  ClientResult get(const std::string& target, const Fields& headers = {});
  ClientResult post(const std::string& target, const std::string& body,
                    const std::string& content_type, const Fields& headers = {});
  // Any method. on_body: a streaming read (the reply's body stays empty).
  ClientResult request(const std::string& method, const std::string& target, const Fields& headers,
                       const std::string& body = {}, const std::string& content_type = {},
                       const BodySink& on_body = nullptr);
  // Opens the connection (if none is kept) without a request: a port probe.
  ClientResult connect();
  // From any thread: ends the request in flight, if any (kCanceled), and its connection. A
  // request made later connects again.
  void cancel();
  // Connections opened so far (a test sees keep-alive reuse).
  uint64_t connections() const { return connections_; }

 private:
  struct Conn;
  void begin();  // a request (or connect()) starts: cancel() may end it
  void end();
  // One try on the kept connection or a new one; *retry: it failed on a reused connection
  // before any answer came (the server had closed it), so a fresh one may try again.
  ClientResult attempt(const std::string& head, const std::string& body, bool head_only,
                       const BodySink& on_body, bool* retry);

  std::string base_url_;
  std::optional<Url> url_;
  ClientOptions options_;
  std::unique_ptr<Conn> conn_;
  std::mutex mu_;           // in_flight_, cancel_of_ and polling_fd_, for cancel()
  uint64_t in_flight_ = 0;  // the request's number while one is in flight, else 0
  uint64_t cancel_of_ = 0;  // the request cancel() was called for
  int polling_fd_ = -1;     // the socket a plain read polls now (cancel() shuts it down)
  uint64_t requests_ = 0;   // written by the requesting thread only
  std::atomic<uint64_t> connections_{0};
};

}  // namespace sluice::net
