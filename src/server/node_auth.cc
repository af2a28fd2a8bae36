#include "server/node_auth.h"

#include <nlohmann/json.hpp>

#include "secret/secret.h"

namespace sluice::server {

bool NodeCredentials::load(const std::string& json_text) {
  ++version_;
  sha_.clear();
  if (json_text.empty()) return true;
  try {
    auto j = nlohmann::json::parse(json_text);
    for (const auto& [node, sha] : j.items())
      if (sha.is_string()) sha_[node] = sha.get<std::string>();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

std::string NodeCredentials::dump() const {
  return nlohmann::json(sha_).dump();
}

std::string NodeCredentials::entry(const std::string& node) const {
  auto it = sha_.find(node);
  return it == sha_.end() ? std::string() : it->second;
}

void NodeCredentials::load_entry(const std::string& node, const std::string& sha) {
  ++version_;
  if (sha.empty())
    sha_.erase(node);
  else
    sha_[node] = sha;
}

NodeAdmission NodeCredentials::admit_register(const std::string& node, const std::string& bearer,
                                              const std::string& credential,
                                              const std::string& join_token) const {
  NodeAdmission out;
  auto it = sha_.find(node);
  if (it != sha_.end()) {
    // 1. A known node: only its credential registers it again (after a crash, a restart).
    if (!bearer.empty() && secret::same(secret::sha256_hex(bearer), it->second)) return out;
    const bool joining = !join_token.empty() && secret::same(bearer, join_token);
    out.status = joining || join_token.empty() ? 403 : 401;
    out.code = "node-has-credential";
    out.error = "node " + node +
                " already belongs to the agent holding its credential (node-credential in that "
                "agent's state directory); another agent cannot take its name. If that state "
                "directory is lost, an admin releases the node: sluice nodes reset-credential " +
                node;
    return out;
  }
  // 2. A new node: the join token (when the server has one) admits it, and the credential it
  //    brings becomes the node's.
  if (!join_token.empty() && !secret::same(bearer, join_token)) {
    out.status = 401;
    out.code = "no-node-credential";
    out.error = "node " + node + " has no credential on record: register with the join token";
    return out;
  }
  if (credential.size() < kMinCredentialChars) {
    out.status = 400;
    out.error = "credential: a new node must bring a credential of at least " +
                std::to_string(kMinCredentialChars) +
                " characters (an agent older than this server sends none: upgrade the agent)";
    return out;
  }
  out.issued = true;
  return out;
}

void NodeCredentials::set(const std::string& node, const std::string& credential) {
  ++version_;
  sha_[node] = secret::sha256_hex(credential);
}

bool NodeCredentials::admit(const std::string& node, const std::string& bearer) const {
  auto it = sha_.find(node);
  return it != sha_.end() && !bearer.empty() &&
         secret::same(secret::sha256_hex(bearer), it->second);
}

bool NodeCredentials::reset(const std::string& node) {
  ++version_;
  return sha_.erase(node) != 0;
}

}  // namespace sluice::server
