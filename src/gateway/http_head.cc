#include "gateway/http_head.h"

#include <boost/beast/http.hpp>

#include <charconv>

namespace sluice::gateway {

namespace http = boost::beast::http;

bool is_hop_by_hop(std::string_view name) {
  // By length first: most end-to-end names are rejected on it.
  switch (name.size()) {
    case 2:
      return net::iequals(name, "te");
    case 7:
      return net::iequals(name, "trailer") || net::iequals(name, "upgrade");
    case 6:
      return net::iequals(name, "expect");
    case 10:
      return net::iequals(name, "connection") || net::iequals(name, "keep-alive");
    case 14:
      return net::iequals(name, "content-length");
    case 16:
      return net::iequals(name, "proxy-connection");
    case 17:
      return net::iequals(name, "transfer-encoding");
    default:
      return false;
  }
}

void serialize_request_head(const net::Request& req, size_t body_size, std::string& out) {
  out.clear();
  out += req.method;
  out += ' ';
  out += req.target;
  out += " HTTP/1.1\r\n";
  for (const auto& [k, v] : req.headers) {
    if (is_hop_by_hop(k)) continue;
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  out += "x-forwarded-for: ";
  out += req.remote_addr;
  out += "\r\n";
  const std::string& m = req.method;
  if (body_size > 0 || m == "POST" || m == "PUT" || m == "PATCH") {
    out += "content-length: ";
    out += std::to_string(body_size);
    out += "\r\n";
  }
  out += "\r\n";
}

net::Response relay_response(HttpResponse&& res, bool head_request) {
  net::Response out;
  out.status = static_cast<int>(res.result_int());
  out.headers.reserve(8);
  for (const auto& f : res.base()) {
    const std::string_view name = f.name_string();
    if (is_hop_by_hop(name)) continue;
    out.headers.emplace_back(name, f.value());
  }
  if (head_request) {
    const auto cl = res[http::field::content_length];
    size_t n = 0;
    const auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), n);
    if (!cl.empty() && ec == std::errc() && p == cl.data() + cl.size()) out.content_length = n;
  }
  out.body = std::move(res.body());
  return out;
}

}  // namespace sluice::gateway
