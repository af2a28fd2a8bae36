#pragma once
// How the server's handlers answer (docs/api.md): a JSON body, or an error as
// {"error": "...", "details": [...]} (the shape the HTTP stack's own errors have too).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/message.h"
#include "proto/protocol.h"

namespace sluice::server {

inline void reply(net::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(proto::dump_json(body), "application/json");
}

inline void fail(net::Response& res, int status, const std::string& error,
                 const std::vector<std::string>& details = {}) {
  reply(res, status, nlohmann::json{{"error", error}, {"details", details}});
}

}  // namespace sluice::server
