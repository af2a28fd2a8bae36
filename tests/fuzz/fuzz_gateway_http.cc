// The HTTP the gateway parses and writes. Requests: Beast's request_parser with the gateway's
// limits, fed in pieces and pipelined as a keep-alive connection would carry them, turned into
// the handlers' view as src/net does (net::to_request); each request then goes through what
// Proxy::handle does before admission (route by path and model, API key or bearer token, tenant
// and class, deadline header) and is written as the upstream head. Responses: an upstream answer
// parsed as the gateway parses it, relayed (relay_response) and written as src/net writes the
// client's head. Both heads must parse again to the same message (no header injection, no
// smuggled second message). The first byte picks the mode and the piece size.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <cstring>

#include "fuzz_util.h"
#include "gateway/config.h"
#include "gateway/http_head.h"
#include "gateway/routing.h"
#include "net/wire.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using sluice::gateway::GatewayConfig;

const GatewayConfig& config() {
  static const GatewayConfig c = [] {
    auto r = sluice::gateway::parse_config(sluice::fuzz::repo_file("examples/gateway/gateway.yaml"),
                                           "gateway.yaml");
    if (!r.ok()) std::abort();
    return r.config;
  }();
  return c;
}

// Parses one message from `in` (from `pos`, advanced past what was used), `piece` bytes at a
// time, the way http::read drives the parser from a socket; put_eof at the end of the input.
template <class Parser>
bool parse(Parser& p, std::string_view in, size_t& pos, size_t piece) {
  beast::flat_buffer buf;
  beast::error_code ec;
  while (!p.is_done()) {
    if (pos < in.size()) {
      const size_t n = std::min(piece, in.size() - pos);
      auto dst = buf.prepare(n);
      std::memcpy(dst.data(), in.data() + pos, n);
      buf.commit(n);
      pos += n;
    } else if (buf.size() == 0 || ec == http::error::need_more) {
      if (!p.got_some()) return false;  // http::read's end_of_stream: the peer sent nothing
      p.put_eof(ec);
      if (ec) return false;
      break;
    }
    for (;;) {
      const size_t used = p.put(buf.data(), ec);
      buf.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return false;
      if (p.is_done() || used == 0) break;
    }
  }
  pos -= buf.size();  // bytes after the message belong to the next one
  return p.is_done();
}

void handle(const sluice::net::Request& req) {
  using namespace sluice::gateway;
  const GatewayConfig& cfg = config();
  std::string_view target = req.target;
  std::string_view path = target.substr(0, target.find('?'));
  std::string model(req.header(cfg.model_header));
  if (model.empty()) model = model_from_json_body(req.body);
  (void)route_pool(cfg, path, model);
  std::string_view key = req.header(cfg.api_key_header);
  if (key.empty()) key = bearer_token(req.header("Authorization"));
  (void)identify(cfg, key, req.header(cfg.class_header));
  if (auto dh = req.header(cfg.deadline_header); !dh.empty()) {
    long long ms = 0;
    (void)std::from_chars(dh.data(), dh.data() + dh.size(), ms);
  }

  // The upstream hop's head and body parse back to the same request, and nothing follows.
  std::string wire;
  serialize_request_head(req, req.body.size(), wire);
  wire += req.body;
  http::request_parser<http::string_body> again;
  again.body_limit(wire.size());
  size_t pos = 0;
  if (!parse(again, wire, pos, wire.size()) || pos != wire.size() ||
      again.get().method_string() != req.method || again.get().target() != req.target ||
      again.get().body() != req.body) {
    std::fprintf(stderr, "upstream head does not parse back:\n%s\n", wire.c_str());
    std::abort();
  }
}

void requests(std::string_view in, size_t piece) {
  const GatewayConfig& cfg = config();
  size_t pos = 0;
  for (int i = 0; i < 16 && pos < in.size(); ++i) {  // a keep-alive connection's requests
    http::request_parser<http::string_body> p;
    p.header_limit(static_cast<std::uint32_t>(cfg.limits.max_header_bytes));
    p.body_limit(static_cast<std::uint64_t>(cfg.limits.max_body_bytes));
    if (!parse(p, in, pos, piece)) return;  // 400, 413 or 431, and the connection closes
    (void)beast::iequals(p.get()[http::field::expect], "100-continue");
    const auto te = p.get()[http::field::transfer_encoding];
    if (!te.empty() && !beast::iequals(te, "chunked")) return;  // 400 and close
    auto msg = p.release();
    const bool keep_alive = msg.keep_alive();
    handle(sluice::net::to_request(std::move(msg), "127.0.0.1", 0));
    if (!keep_alive) return;
  }
}

void response(std::string_view in, size_t piece, bool head, bool keep_alive) {
  using namespace sluice::gateway;
  http::response_parser<http::string_body> p;
  p.body_limit(static_cast<std::uint64_t>(config().pools.at(0).max_response_bytes));
  if (head) p.skip(true);
  size_t pos = 0;
  if (!parse(p, in, pos, piece)) return;                // 502 to the client
  if (!relayable_status(p.get().result_int())) return;  // 502 to the client
  sluice::net::Response res = relay_response(p.release(), head);
  res.headers.emplace_back("x-sluice-pool", "llama-70b");
  std::string wire;
  sluice::net::serialize_response_head(res, 11, keep_alive, head, wire);
  const unsigned code = static_cast<unsigned>(res.status);
  const bool has_body = !head && code >= 200 && code != 204 && code != 304;
  if (has_body) wire += res.body;
  http::response_parser<http::string_body> again;
  again.body_limit(wire.size());
  if (head) again.skip(true);
  size_t at = 0;
  if (!parse(again, wire, at, wire.size()) || at != wire.size() ||
      again.get().result_int() != code || (has_body && again.get().body() != res.body)) {
    std::fprintf(stderr, "client head does not parse back:\n%s\n", wire.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t piece = (mode >> 3) == 0 ? in.size() + 1 : (mode >> 3);  // 1..31 bytes, or all
  if ((mode & 1) == 0)
    requests(in, piece);
  else
    response(in, piece, mode & 2, mode & 4);
  return 0;
}
