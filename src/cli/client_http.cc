#include "cli/client_http.h"

#include <pwd.h>
#include <unistd.h>

#include "net/client.h"
#include "net/leader_witness.h"
#include "proto/split.h"

#include <cctype>
#include <vector>

namespace sluice::cli {

namespace {

// The phrases a user of this API meets; others print the number alone.
std::string reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Who runs this client: a server without tokens records it as the jobs' submitter (docs/api.md,
// "Auth"); a server with tokens ignores it (the token says who).
void add_local_user(net::Fields& headers) {
  headers.emplace_back("X-Sluice-User", local_user_name());
  headers.emplace_back("X-Sluice-Uid", std::to_string(::getuid()));
  headers.emplace_back("X-Sluice-Gid", std::to_string(::getgid()));
}

}  // namespace

std::string local_user_name() {
  const uid_t uid = ::getuid();
  std::string name;
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) name = found->pw_name;
  return name.empty() ? "uid-" + std::to_string(uid) : name;
}

Outcome<std::string> normalize_server_url(const std::string& url_in) {
  std::string url = trim(url_in);
  if (url.empty()) return Outcome<std::string>::fail({2, "error: empty server URL"});
  if (url.find("://") == std::string::npos) url = "http://" + url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  auto scheme_end = url.find("://");
  std::string scheme = url.substr(0, scheme_end);
  std::string rest = url.substr(scheme_end + 3);
  if (scheme != "http" && scheme != "https")
    return Outcome<std::string>::fail(
        {2, "error: server URL \"" + url_in + "\": scheme must be http or https"});
  if (rest.empty() || rest.find('/') != std::string::npos)
    return Outcome<std::string>::fail(
        {2, "error: server URL \"" + url_in + "\" must be http://HOST[:PORT] (no path)"});
  return Outcome<std::string>::success(url);
}

ClientFailure describe_http_error(const HttpReply& reply, const std::string& server) {
  // 1. The status line, then the server's own words: {"error","details"} when it sent JSON,
  // else its text (a proxy's HTML page, a plain message), cut to something readable.
  std::string msg = "error: HTTP " + std::to_string(reply.status);
  std::string phrase = reason_phrase(reply.status);
  if (!phrase.empty()) msg += " " + phrase;
  std::vector<std::string> details;
  auto j = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error")) {
    std::string error = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
    msg += ": " + error;
    // A detail that repeats the error (a parser message used for both) is printed once.
    if (j.contains("details") && j["details"].is_array())
      for (const auto& d : j["details"]) {
        std::string detail = d.is_string() ? d.get<std::string>() : d.dump();
        if (detail != error) details.push_back(detail);
      }
  } else {
    std::string text = trim(reply.body);
    if (text.size() > 500) text = text.substr(0, 500) + "...";
    if (!text.empty()) msg += ": " + text;
  }
  for (const auto& d : details) msg += "\n  " + d;
  // 2. Hints for the statuses a user can act on.
  if (reply.status == 429) {
    msg += "\n  the server is shedding load (a pending cap is full); ";
    msg += reply.retry_after.empty() ? "retry later"
                                     : "retry after " + reply.retry_after + " s (Retry-After)";
  } else if (reply.status == 401) {
    msg += "\n  " + server + " wants a token: set --token or SLUICE_TOKEN";
  } else if (reply.status == 403) {
    msg += "\n  the token is not allowed to do this (wrong namespace or role)";
  }
  return ClientFailure{1, msg};
}

namespace {

// A standby replica's answer (docs/ha.md): the request belongs to the leader.
bool from_standby(const HttpReply& r) {
  if (r.status != 503) return false;
  auto j = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("code", "") == "not_leader";
}

}  // namespace

// Several servers (replicas, "URL,URL,..."): the first that is reachable and not a standby
// answers; the one that did is tried first next time.
Outcome<HttpReply> HttpClient::request(const std::string& method, const std::string& path,
                                       const std::string& body,
                                       const std::string& content_type) const {
  const auto servers = proto::split_list(conn_.server);
  if (servers.size() <= 1) return request_one(conn_.server, method, path, body, content_type);
  if (!leader_found_) find_leader(servers);
  Outcome<HttpReply> last;
  for (size_t i = 0; i < servers.size(); ++i) {
    const size_t at = (leader_ + i) % servers.size();
    last = request_one(servers[at], method, path, body, content_type);
    if (last.ok && !from_standby(last.value)) {
      leader_ = at;
      return last;
    }
  }
  return last;
}

// The first server that says it is ready (GET /readyz, 1 s to connect and to answer), or the
// leader a standby names (its Sluice-Leader header), is asked first: a frozen leader, which
// accepts connections but answers nothing, then costs a second instead of the read timeout
// (docs/ha.md). When no server answers so, they are tried in the order given.
void HttpClient::find_leader(const std::vector<std::string>& servers) const {
  leader_found_ = true;
  std::vector<std::string> urls;  // as the replicas name each other (a bad one fails later)
  for (const auto& s : servers) {
    auto url = normalize_server_url(s);
    urls.push_back(url.ok ? url.value : s);
  }
  if (auto at = net::witness_leader(urls, urls.size(), 1000)) leader_ = *at;
}

// One client per server URL, kept: a command that pages through a list reuses its connection.
net::Client& HttpClient::client_for(const std::string& url) const {
  auto& cli = clients_.by_url[url];
  if (!cli) {
    const std::chrono::seconds read(conn_.read_timeout_s);
    cli = std::make_shared<net::Client>(
        url, net::ClientOptions{.connect_timeout = std::chrono::seconds(conn_.connect_timeout_s),
                                .write_timeout = read,
                                .read_timeout = read});
  }
  return *cli;
}

Outcome<HttpReply> HttpClient::request_one(const std::string& server, const std::string& method,
                                           const std::string& path, const std::string& body,
                                           const std::string& content_type) const {
  auto url = normalize_server_url(server);
  if (!url.ok) return Outcome<HttpReply>::fail(url.failure);
  if (method != "GET" && method != "POST" && method != "PUT" && method != "DELETE")
    return Outcome<HttpReply>::fail({2, "error: unsupported method " + method});
  net::Client& cli = client_for(url.value);
  if (!cli.valid())
    return Outcome<HttpReply>::fail({2, "error: cannot use server URL " + url.value});
  net::Fields headers;
  if (!conn_.token.empty()) headers.emplace_back("Authorization", "Bearer " + conn_.token);
  add_local_user(headers);
  auto res = cli.request(method, path, headers, method == "GET" ? "" : body,
                         method == "GET" ? "" : content_type);
  if (!res) {
    if (res.error() == net::ClientError::kConnection)
      return Outcome<HttpReply>::fail(
          {2, "error: cannot reach sluice server at " + url.value +
                  " (is `sluice serve` running? set --server or SLUICE_SERVER)"});
    return Outcome<HttpReply>::fail(
        {2, "error: request " + method + " " + url.value + path + " failed: " + res.error_text()});
  }
  HttpReply reply;
  reply.status = res->status;
  reply.body = res->body;
  reply.content_type = res->get_header_value("Content-Type");
  reply.retry_after = res->get_header_value("Retry-After");
  reply.log_size = res->get_header_value("X-Sluice-Log-Size");
  return Outcome<HttpReply>::success(std::move(reply));
}

Outcome<HttpReply> HttpClient::call(const std::string& method, const std::string& path,
                                    const std::string& body,
                                    const std::string& content_type) const {
  auto r = request(method, path, body, content_type);
  if (!r.ok) return r;
  if (r.value.status < 200 || r.value.status >= 300) {
    const auto servers = proto::split_list(conn_.server);
    auto url =
        normalize_server_url(servers.empty() ? conn_.server : servers[leader_ % servers.size()]);
    return Outcome<HttpReply>::fail(describe_http_error(r.value, url.ok ? url.value : ""));
  }
  return r;
}

Outcome<nlohmann::json> HttpClient::call_json(const std::string& method, const std::string& path,
                                              const std::string& body,
                                              const std::string& content_type) const {
  auto r = call(method, path, body, content_type);
  if (!r.ok) return Outcome<nlohmann::json>::fail(r.failure);
  auto j = nlohmann::json::parse(r.value.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    std::string head = r.value.body.substr(0, 200);
    return Outcome<nlohmann::json>::fail(
        {1, "error: " + method + " " + path + ": the server's reply is not JSON: " + head});
  }
  return Outcome<nlohmann::json>::success(std::move(j));
}

std::string url_encode(const std::string& value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace sluice::cli
