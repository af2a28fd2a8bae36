#pragma once
// Node identity (docs/api.md, "Trust model"). The join token only bootstraps: at its first
// registration an agent brings a credential of its own making (random, kept 0600 in its state
// directory), and the server keeps that credential's SHA-256 per node. From then on the node
// is whoever holds that credential: later registrations and every sync must carry it, and the
// join token alone can no longer register the name, so a second agent cannot take a node over.
// An admin releases a node whose state directory was lost (reset); its next agent joins anew.
//
// Pure bookkeeping, no I/O: ServerState persists each node's entry as the meta key
// "node-credential/<node>" (one small write per registration, also with 10,000 nodes; the
// whole map as one "node-credentials" value, as earlier servers wrote it, still loads).
#include <map>
#include <string>

namespace sluice::server {

struct NodeAdmission {
  int status = 200;  // 200, 400, 401 or 403
  std::string error;
  // Machine-readable reason for the agent: "no-node-credential" (register with the join token)
  // or "node-has-credential" (the name belongs to another agent's credential).
  std::string code;
  bool issued = false;  // the request's credential became the node's
};

class NodeCredentials {
 public:
  static constexpr size_t kMinCredentialChars = 32;

  // The stored form, {"node": "<sha256 hex>", ...}; "" or garbage loads as none (and says so).
  bool load(const std::string& json_text);
  std::string dump() const;
  // One node's stored entry (its credential's SHA-256, "" for none) under the meta key
  // kMetaPrefix + node; load_entry() applies one over what load() read ("" erases).
  static constexpr const char* kMetaPrefix = "node-credential/";
  std::string entry(const std::string& node) const;
  void load_entry(const std::string& node, const std::string& sha);

  // A registration of `node` authenticated by `bearer` (the Authorization header's token)
  // that offers `credential` for later requests. join_token "" = agents join without one.
  NodeAdmission admit_register(const std::string& node, const std::string& bearer,
                               const std::string& credential, const std::string& join_token) const;
  // Records the credential admit_register accepted (issued).
  void set(const std::string& node, const std::string& credential);
  // A sync (or a log upload) of `node`: its credential, nothing else.
  bool admit(const std::string& node, const std::string& bearer) const;
  // Forgets the node's credential: the next agent registers with the join token.
  bool reset(const std::string& node);
  bool has(const std::string& node) const { return sha_.count(node) != 0; }
  // Counts every change of any credential: a bearer admitted at version V is still admitted
  // while version() == V, without hashing it again (a sync is checked before its body is read
  // and again as its reports are applied: one SHA-256 per sync instead of two).
  uint64_t version() const { return version_; }

 private:
  std::map<std::string, std::string> sha_;  // node -> SHA-256 of its credential, hex
  uint64_t version_ = 1;                    // 0 is never a version (ServerState: "unchecked")
};

}  // namespace sluice::server
