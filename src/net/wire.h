#pragma once
// Between Beast's parsed request and the handlers' view, and the response head the server writes
// by hand (one gather write of head and body; Beast's serializer costs more than the rest of a
// small request). Pure functions, so tests and fuzz targets reach them without sockets.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string>

#include "net/message.h"

namespace sluice::net {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;

// The handlers' view of a parsed request (the body is moved out of `msg`). `path` is
// percent-decoded, the query split into `params`.
Request to_request(BeastRequest&& msg, const std::string& remote_addr, int remote_port);

// The response head: status line in the request's `version`, Content-Type, the headers (any
// with a CR, LF or NUL, or a malformed name, is dropped: no header injection; so are framing
// headers), Content-Length (none for 1xx, 204, 304; for a HEAD request res.content_length when
// set, else the body's size), and Connection when it differs from the version's default.
// `chunked`: Transfer-Encoding: chunked instead of Content-Length (a streamed answer).
void serialize_response_head(const Response& res, unsigned version, bool keep_alive,
                             bool head_request, std::string& out, bool chunked = false);
// One chunk of a chunked body ("1a\r\n" data "\r\n"); empty data: the last chunk ("0\r\n\r\n").
std::string chunk_frame(std::string_view data);

}  // namespace sluice::net
