#pragma once
// Bearer tokens (docs/api.md "Auth"): each token has a role and, for members, the namespaces it
// may see and act in. Agents join with the join token. Read from a `kind: ServerAuth` document
// in the server's configuration.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "core/model/result.h"

namespace sluice::server {

// The unix user behind a token (docs/api.md "Auth"): its pods run as uid/gid on root agents,
// and securityContext.runAsUser/runAsGroup may also name the listed ids. -1: none.
struct UnixIdentity {
  int64_t uid = -1;
  int64_t gid = -1;
  std::vector<int64_t> run_as_users;
  std::vector<int64_t> run_as_groups;
};

struct Token {
  std::string name;
  std::string token;
  bool admin = false;
  std::vector<std::string> namespaces;  // members only; "*" = every namespace
  UnixIdentity unix_id;
};

struct Caller {
  std::string name = "anonymous";
  bool admin = true;  // with auth off everyone is admin (loopback only)
  std::vector<std::string> namespaces;
  UnixIdentity unix_id;
  bool sees(const std::string& ns) const;
};

struct AuthConfig {
  // Bootstraps a node's identity (server/node_auth.h); "" = agents join without a token, only
  // allowed without user tokens (loopback).
  std::string join_token;
  std::vector<Token> tokens;
  bool enabled() const { return !tokens.empty(); }
  // The caller for an Authorization header value; nullopt: missing or unknown token.
  std::optional<Caller> caller(const std::string& authorization_header) const;
};

// Finds `kind: ServerAuth` documents in the sources (none: auth off). Errors name file and line.
Result<AuthConfig> parse_auth(const std::vector<Source>& sources);

}  // namespace sluice::server
