#include "gateway/http_head.h"

#include <boost/beast/http.hpp>

namespace sluice::gateway {

namespace http = boost::beast::http;

bool is_hop_by_hop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
    case http::field::transfer_encoding:
    case http::field::content_length:
    case http::field::expect:
      return true;
    default:
      return false;
  }
}

namespace {

void append_fields(const http::fields& fields, std::string& out) {
  for (const auto& f : fields) {
    if (is_hop_by_hop(f.name())) continue;
    out += f.name_string();
    out += ": ";
    out += f.value();
    out += "\r\n";
  }
}

}  // namespace

void serialize_request_head(const HttpRequest& req, std::string_view client_ip, std::string& out) {
  out.clear();
  out += req.method_string();
  out += ' ';
  out += req.target();
  out += " HTTP/1.1\r\n";
  append_fields(req.base(), out);
  out += "x-forwarded-for: ";
  out += client_ip;
  out += "\r\n";
  const auto m = req.method();
  if (!req.body().empty() || m == http::verb::post || m == http::verb::put ||
      m == http::verb::patch) {
    out += "content-length: ";
    out += std::to_string(req.body().size());
    out += "\r\n";
  }
  out += "\r\n";
}

void serialize_response_head(const HttpResponse& res, unsigned version, bool keep_alive,
                             bool head_request, std::string_view pool, std::string& out) {
  out.clear();
  out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(res.result_int());
  out += ' ';
  auto reason = res.reason();
  out += reason.empty() ? http::obsolete_reason(res.result()) : reason;
  out += "\r\n";
  append_fields(res.base(), out);
  const unsigned code = res.result_int();
  if (head_request) {
    if (auto cl = res[http::field::content_length]; !cl.empty()) {
      out += "content-length: ";
      out += cl;
      out += "\r\n";
    }
  } else if (code >= 200 && code != 204 && code != 304) {
    out += "content-length: ";
    out += std::to_string(res.body().size());
    out += "\r\n";
  }
  if (!pool.empty()) {
    out += "x-sluice-pool: ";
    out += pool;
    out += "\r\n";
  }
  if (!keep_alive && version >= 11) out += "connection: close\r\n";
  if (keep_alive && version == 10) out += "connection: keep-alive\r\n";
  out += "\r\n";
}

}  // namespace sluice::gateway
