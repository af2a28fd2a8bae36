#include "server/auth.h"

#include "config/yaml_documents.h"
#include "secret/secret.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

namespace sluice::server {
namespace {

// Every token, the join token included: shorter ones can be guessed or brute-forced.
constexpr size_t kMinTokenChars = 16;

constexpr int64_t kMaxUnixId = 0x7fffffff;

// uid, gid, runAsUsers, runAsGroups of one token; "" or ".field: why".
std::string read_unix_identity(const YAML::Node& t, UnixIdentity& out) {
  auto id = [](const YAML::Node& n, const char* field, int64_t& v) -> std::string {
    v = n.as<int64_t>();
    if (v < 0 || v > kMaxUnixId)
      return std::string(".") + field + ": " + std::to_string(v) + " is not a uid/gid (0.." +
             std::to_string(kMaxUnixId) + ")";
    return {};
  };
  for (auto [field, v] : {std::pair{"uid", &out.uid}, std::pair{"gid", &out.gid}})
    if (t[field])
      if (auto why = id(t[field], field, *v); !why.empty()) return why;
  for (auto [field, list] :
       {std::pair{"runAsUsers", &out.run_as_users}, std::pair{"runAsGroups", &out.run_as_groups}}) {
    if (!t[field]) continue;
    if (!t[field].IsSequence()) return std::string(".") + field + ": must be a list";
    for (const auto& n : t[field]) {
      int64_t v = 0;
      if (auto why = id(n, field, v); !why.empty()) return why;
      list->push_back(v);
    }
  }
  return {};
}

}  // namespace

bool Caller::sees(const std::string& ns) const {
  if (admin) return true;
  return std::any_of(namespaces.begin(), namespaces.end(),
                     [&](const std::string& n) { return n == "*" || n == ns; });
}

std::optional<Caller> AuthConfig::caller(const std::string& header) const {
  if (!enabled()) return Caller{};
  const std::string t = secret::bearer(header);
  if (t.empty()) return std::nullopt;
  for (const auto& tok : tokens)
    if (secret::same(tok.token, t)) return Caller{tok.name, tok.admin, tok.namespaces, tok.unix_id};
  return std::nullopt;
}

Result<AuthConfig> parse_auth(const std::vector<Source>& sources) {
  AuthConfig out;
  for (const auto& src : sources) {
    std::vector<YAML::Node> docs;
    try {
      docs = config_detail::load_all_documents(src.text);  // LoadAll may not end
    } catch (const YAML::Exception& e) {
      return Error{src.name + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
    }
    for (const auto& d : docs) {
      if (!d.IsMap() || !d["kind"] || d["kind"].as<std::string>("") != "ServerAuth") continue;
      const auto where = src.name + ":" + std::to_string(d.Mark().line + 1) + ": ";
      const auto spec = d["spec"];
      if (!spec || !spec.IsMap()) return Error{where + "spec: required map"};
      try {
        if (spec["joinToken"]) {
          out.join_token = spec["joinToken"].as<std::string>();
          // Anyone with it can register a node: it must not be guessable.
          if (out.join_token.size() < kMinTokenChars)
            return Error{where + "spec.joinToken: at least " + std::to_string(kMinTokenChars) +
                         " characters (got " + std::to_string(out.join_token.size()) +
                         "); e.g. `openssl rand -hex 16`"};
        }
        if (spec["tokens"]) {
          if (!spec["tokens"].IsSequence()) return Error{where + "spec.tokens: must be a list"};
          size_t i = 0;
          for (const auto& t : spec["tokens"]) {
            const auto at = where + "spec.tokens[" + std::to_string(i++) + "]";
            Token tok;
            tok.name = t["name"].as<std::string>("");
            tok.token = t["token"].as<std::string>("");
            if (tok.token.size() < kMinTokenChars)
              return Error{at + ".token: required, at least " + std::to_string(kMinTokenChars) +
                           " characters (got " + std::to_string(tok.token.size()) +
                           "); e.g. `openssl rand -hex 16`"};
            const std::string role = t["role"].as<std::string>("member");
            if (role != "admin" && role != "member")
              return Error{at + ".role: \"" + role + "\" is not admin or member"};
            tok.admin = role == "admin";
            if (t["namespaces"])
              for (const auto& ns : t["namespaces"]) tok.namespaces.push_back(ns.as<std::string>());
            if (!tok.admin && tok.namespaces.empty())
              return Error{at + ".namespaces: a member needs at least one namespace"};
            if (auto why = read_unix_identity(t, tok.unix_id); !why.empty()) return Error{at + why};
            if (tok.name.empty()) tok.name = role + "-" + std::to_string(i);
            out.tokens.push_back(std::move(tok));
          }
        }
      } catch (const YAML::Exception& e) {
        return Error{where + "spec: " + e.msg};
      }
      // With user tokens the API is guarded, so the agents' door must be too: without a join
      // token anyone who reaches the port could register a node.
      if (!out.tokens.empty() && out.join_token.empty())
        return Error{where +
                     "spec.joinToken: required when spec.tokens is set (without it anyone who "
                     "reaches the server could register as a node); e.g. `openssl rand -hex 16`"};
    }
  }
  return out;
}

}  // namespace sluice::server
