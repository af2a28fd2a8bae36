#pragma once
// The agent's side of a request to the server (net::Client): its bearer header and what an
// answer says when it is not 200. Shared by the sync loop and the log uploader.

#include <string>

#include "net/client.h"
#include "proto/protocol.h"

namespace sluice::agent {

inline std::string error_text(const net::ClientResult& res) {
  if (!res) return "cannot reach the server (" + res.error_text() + ")";
  std::string text = "HTTP " + std::to_string(res->status);
  try {
    auto body = nlohmann::json::parse(res->body).get<proto::ErrorBody>();
    if (!body.error.empty()) text += ": " + body.error;
    for (const auto& d : body.details) text += "; " + d;
  } catch (const std::exception&) {
    if (!res->body.empty()) text += ": " + res->body.substr(0, 200);
  }
  return text;
}

inline net::Fields bearer(const std::string& token) {
  return token.empty() ? net::Fields{} : net::Fields{{"Authorization", "Bearer " + token}};
}

// The machine-readable reason of an error answer ("code"), "" when there is none.
inline std::string error_code(const net::ClientResult& res) {
  if (!res) return {};
  try {
    return nlohmann::json::parse(res->body).value("code", std::string());
  } catch (const std::exception&) {
    return {};
  }
}

// "17/0": a pod in log lines.
inline std::string ref_name(proto::PodRef r) {
  return std::to_string(r.job) + "/" + std::to_string(r.pod);
}

}  // namespace sluice::agent
