#pragma once
// The asynchronous side of the one HTTP client (net::Client, client.h, is the synchronous one):
// a keep-alive connection to an upstream server that carries one exchange at a time, for a
// caller that must not hold a thread per request. The gateway's proxy runs hundreds of them on
// its one I/O thread, pooled per backend, with deadlines checked by its own sweep; net::Client
// waits for each of its requests on a private io_context instead. Both read an answer the same
// way (answer_parser(), reusable()).
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace sluice::net {

using AnswerParser = boost::beast::http::response_parser<boost::beast::http::string_body>;

// Prepares `parser` for one answer: at most body_limit body bytes (beyond: http::error::
// body_limit); an answer to HEAD has no body whatever its Content-Length says.
inline void answer_parser(AnswerParser& parser, uint64_t body_limit, bool head_only) {
  parser.body_limit(body_limit);
  if (head_only) parser.skip(true);
}

// After a complete answer: whether the connection may carry another request (the server
// allows keep-alive and the body was not delimited by the end of the connection).
inline bool reusable(const AnswerParser& parser) {
  return parser.get().keep_alive() && !parser.need_eof();
}

class UpstreamConn {
 public:
  using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp,
                                                  boost::asio::io_context::executor_type>;
  explicit UpstreamConn(boost::asio::io_context& ioc) : socket(ioc.get_executor()) {}

  Socket socket;  // bound to the io_context's own executor: no type-erased executor
  boost::beast::flat_buffer buffer;
  std::optional<AnswerParser> parser;  // the answer of the exchange in flight, or the last one
  bool connected = false;
  bool reused = false;  // this exchange runs on a connection an earlier one left open

  // Writes `head` and `body` in one gather write, then reads the whole answer into `parser`.
  // done(ec, response_started): response_started when any of the answer had come. The caller
  // keeps this connection and both strings alive until then.
  template <class Done>
  void async_exchange(const std::string& head, const std::string& body, uint64_t body_limit,
                      bool head_only, Done&& done) {
    const std::array<boost::asio::const_buffer, 2> bufs = {boost::asio::buffer(head),
                                                           boost::asio::buffer(body)};
    boost::asio::async_write(
        socket, bufs,
        [this, body_limit, head_only, done = std::forward<Done>(done)](boost::system::error_code ec,
                                                                       std::size_t) mutable {
          if (ec) return done(ec, false);
          parser.emplace();
          answer_parser(*parser, body_limit, head_only);
          boost::beast::http::async_read(
              socket, buffer, *parser,
              [done = std::move(done)](boost::system::error_code ec, std::size_t n) mutable {
                done(ec, n > 0);
              });
        });
  }
};

}  // namespace sluice::net
