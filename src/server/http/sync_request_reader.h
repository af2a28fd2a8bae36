#pragma once
// The server's reader of an agent's sync body (POST /v1/agents/{node}/sync), the request the
// server reads most: nlohmann's SAX events straight into proto::SyncRequest, without the
// document tree that json::parse builds and get<SyncRequest>() then walks twice (once for
// require_integers, once for the fields).
//
// It reads only the shapes an agent writes and declines everything else: a float, null, a
// boolean where a number goes, a repeated key, a wrong type, text that does not parse. A
// declined body goes the old way (parse_sync_request), so an odd body gets the same value or
// the same error text as before, by construction; unknown keys are skipped as the old path
// ignores them (a float inside one is still declined: require_integers rejects it).
#include <string_view>

#include "proto/protocol.h"

namespace sluice::server {

// True with *out set when the fast reader read the body; false (out untouched) when it declined.
bool read_sync_request_fast(std::string_view body, proto::SyncRequest* out);

// The body as SyncRequest: the fast reader, else json::parse + get<SyncRequest>() (throws
// nlohmann::json::exception on a body that is not one, which the server answers with 400).
proto::SyncRequest parse_sync_request(std::string_view body);

}  // namespace sluice::server
