#pragma once
// What every HTTP handler of `sluice serve` shares: JSON replies and errors (http_reply.h), and
// ids from paths and queries.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/job.h"
#include "net/message.h"
#include "proto/protocol.h"
#include "server/http/reply.h"

namespace sluice::server {

inline std::optional<JobId> parse_id(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  JobId v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<JobId>(c - '0');
  }
  return v;
}

// ?start=1 (or true): the job views carry their predicted start.
inline bool wants_start(const net::Request& req) {
  const std::string v = req.has_param("start") ? req.get_param_value("start") : "";
  return v == "1" || v == "true";
}

}  // namespace sluice::server
