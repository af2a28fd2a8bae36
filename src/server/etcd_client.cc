#include "server/etcd_client.h"

#include "net/client.h"

namespace sluice::server {

using nlohmann::json;

int64_t etcd_int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const auto& v = j[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return std::strtoll(v.get<std::string>().c_str(), nullptr, 10);
  return 0;
}

EtcdClient::EtcdClient(std::vector<std::string> endpoints, int read_timeout_s)
    : endpoints_(std::move(endpoints)), read_timeout_s_(read_timeout_s) {}

EtcdClient::~EtcdClient() = default;

net::Client& EtcdClient::client() {
  if (!client_) {
    const std::chrono::seconds timeout(read_timeout_s_);
    client_ = std::make_unique<net::Client>(
        endpoints_[current_], net::ClientOptions{.connect_timeout = std::chrono::seconds(1),
                                                 .write_timeout = timeout,
                                                 .read_timeout = timeout});
  }
  return *client_;
}

Result<json> EtcdClient::call(const std::string& path, const json& body) {
  const std::string text = body.dump();
  std::string why;
  // 1. Each endpoint once, starting with the one that answered last.
  for (size_t tries = 0; tries < endpoints_.size(); ++tries) {
    auto res = client().post(path, text, "application/json");
    if (!res) {
      why += (why.empty() ? "" : "; ") + endpoints_[current_] + ": " + res.error_text();
      client_.reset();
      current_ = (current_ + 1) % endpoints_.size();
      continue;
    }
    // 2. An answer: etcd's own errors ("etcdserver: request timed out" without quorum,
    // "request is too large") are errors of this call, not of the endpoint.
    json j = json::parse(res->body, nullptr, false);
    if (res->status != 200 || j.is_discarded()) {
      std::string msg = j.is_object() ? j.value("message", j.value("error", "")) : "";
      if (msg.empty()) msg = res->body.substr(0, 200);
      return Error{"etcd " + endpoints_[current_] + path + ": HTTP " + std::to_string(res->status) +
                   ": " + msg};
    }
    return j;
  }
  return Error{"cannot reach etcd (" + why + ")"};
}

EtcdKv EtcdClient::decode_kv(const json& kv) {
  EtcdKv out;
  out.key = base64_decode(kv.value("key", ""));
  out.value = base64_decode(kv.value("value", ""));
  out.create_revision = etcd_int(kv, "create_revision");
  out.version = etcd_int(kv, "version");
  out.lease = etcd_int(kv, "lease");
  return out;
}

Result<std::vector<EtcdKv>> EtcdClient::range(const std::string& key, const std::string& range_end,
                                              size_t page) {
  std::vector<EtcdKv> out;
  std::string from = key;
  int64_t revision = 0;
  // Bounded: every page moves `from` past the last key it returned.
  for (;;) {
    json req{{"key", base64_encode(from)},
             {"range_end", base64_encode(range_end)},
             {"limit", std::to_string(page)}};
    if (revision) req["revision"] = std::to_string(revision);
    auto r = call("/v3/kv/range", req);
    if (!r) return Error{r.error()};
    if (!revision) revision = etcd_int((*r)["header"], "revision");
    const json kvs = r->value("kvs", json::array());
    for (const auto& kv : kvs) out.push_back(decode_kv(kv));
    if (!r->value("more", false) || kvs.empty()) return out;
    from = out.back().key + std::string(1, '\0');
  }
}

Result<std::optional<EtcdKv>> EtcdClient::get(const std::string& key) {
  auto r = call("/v3/kv/range", json{{"key", base64_encode(key)}});
  if (!r) return Error{r.error()};
  const json kvs = r->value("kvs", json::array());
  if (kvs.empty()) return std::optional<EtcdKv>{};
  return std::optional<EtcdKv>{decode_kv(kvs[0])};
}

Result<EtcdClient::Lease> EtcdClient::grant(int64_t ttl_s) {
  auto r = call("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}});
  if (!r) return Error{r.error()};
  if (r->contains("error") && (*r)["error"].is_string() &&
      !(*r)["error"].get<std::string>().empty())
    return Error{"etcd refused a lease: " + (*r)["error"].get<std::string>()};
  const int64_t id = etcd_int(*r, "ID");
  if (id == 0) return Error{"etcd granted no lease: " + r->dump()};
  return Lease{id, std::max(ttl_s, etcd_int(*r, "TTL"))};
}

Result<bool> EtcdClient::revoke(int64_t lease) {
  auto r = call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}});
  if (r) return true;
  // etcd answers "requested lease not found" for a lease that expired or was revoked already.
  if (r.error().find("lease not found") != std::string::npos) return false;
  return Error{r.error()};
}

Result<int64_t> EtcdClient::keepalive(int64_t lease) {
  auto r = call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}});
  if (!r) return Error{r.error()};
  return etcd_int(r->value("result", json::object()), "TTL");
}

Result<EtcdClient::LeaseLeft> EtcdClient::time_to_live(int64_t lease) {
  auto r = call("/v3/lease/timetolive", json{{"ID", std::to_string(lease)}});
  if (!r) return Error{r.error()};
  // A lease that is gone answers TTL -1 (and no grantedTTL).
  return LeaseLeft{etcd_int(*r, "TTL"), etcd_int(*r, "grantedTTL")};
}

json EtcdClient::put_op(const std::string& key, const std::string& value, int64_t lease) {
  json put{{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease) put["lease"] = std::to_string(lease);
  return json{{"request_put", std::move(put)}};
}

json EtcdClient::delete_op(const std::string& key, const std::string& range_end) {
  json del{{"key", base64_encode(key)}};
  if (!range_end.empty()) del["range_end"] = base64_encode(range_end);
  return json{{"request_delete_range", std::move(del)}};
}

json EtcdClient::range_op(const std::string& key) {
  return json{{"request_range", {{"key", base64_encode(key)}}}};
}

}  // namespace sluice::server
