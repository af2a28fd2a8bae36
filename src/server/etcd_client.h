#pragma once
// A small client of etcd's v3 JSON gateway (etcd 3.4: POST /v3/kv/range, /v3/kv/txn,
// /v3/lease/grant, /v3/lease/keepalive; keys and values base64 in the JSON), over net::Client.
// Several endpoints: a request that cannot reach one tries the next, so one etcd member down
// costs a reconnect, not an error. Not thread-safe: one client per thread.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "proto/base64.h"

namespace sluice::net {
class Client;
}

namespace sluice::server {

using proto::base64_decode;  // empty on malformed input (etcd never sends any)
using proto::base64_encode;

struct EtcdKv {
  std::string key, value;
  int64_t create_revision = 0;
  int64_t version = 0;  // puts since the key was created
  int64_t lease = 0;
};

class EtcdClient {
 public:
  // endpoints: "http://host:port" each.
  explicit EtcdClient(std::vector<std::string> endpoints, int read_timeout_s = 10);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // One gateway call; the reply's JSON, or why none came (every endpoint tried once).
  Result<nlohmann::json> call(const std::string& path, const nlohmann::json& body);
  // Every key in [key, range_end) in key order, read in pages of `page` keys at one revision.
  Result<std::vector<EtcdKv>> range(const std::string& key, const std::string& range_end,
                                    size_t page = 200);
  Result<std::optional<EtcdKv>> get(const std::string& key);
  struct Lease {
    int64_t id = 0;
    int64_t ttl_s = 0;  // as granted: etcd raises a TTL under its minimum
  };
  // A new lease of ttl_s seconds.
  Result<Lease> grant(int64_t ttl_s);
  // Ends a lease now: the keys attached to it go. A lease that is gone already is no error.
  Result<bool> revoke(int64_t lease);
  // Renews the lease; its remaining TTL (<= 0: the lease is gone).
  Result<int64_t> keepalive(int64_t lease);
  // Another replica's lease, without renewing it: whole seconds left (etcd rounds down; -1: the
  // lease is gone) and the TTL it was granted.
  struct LeaseLeft {
    int64_t left_s = -1;
    int64_t granted_s = 0;
  };
  Result<LeaseLeft> time_to_live(int64_t lease);

  static EtcdKv decode_kv(const nlohmann::json& kv);
  // {"request_put": {...}}, {"request_delete_range": {...}}, {"request_range": {...}}.
  static nlohmann::json put_op(const std::string& key, const std::string& value, int64_t lease = 0);
  // range_end "": the key alone; else every key in [key, range_end).
  static nlohmann::json delete_op(const std::string& key, const std::string& range_end = "");
  static nlohmann::json range_op(const std::string& key);

 private:
  net::Client& client();

  std::vector<std::string> endpoints_;
  size_t current_ = 0;
  int read_timeout_s_;
  std::unique_ptr<net::Client> client_;
};

// A JSON number etcd sends as a string ("revision": "12"); 0 when absent.
int64_t etcd_int(const nlohmann::json& j, const char* key);

}  // namespace sluice::server
