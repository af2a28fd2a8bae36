#include "server/etcd_store.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "proto/split.h"

namespace sluice::server {

using nlohmann::json;

namespace {

Result<int64_t> positive(const std::string& name, const std::string& value, int64_t max) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v <= 0 || v > max)
    return Error{"--store: " + name + "=" + value + ": expected a whole number in 1.." +
                 std::to_string(max)};
  return static_cast<int64_t>(v);
}

Result<bool> parse_query(const std::string& query, EtcdOptions& o) {
  for (const auto& pair : proto::split_list(query, '&')) {
    const auto eq = pair.find('=');
    const std::string name = pair.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    Result<int64_t> v = Error{"--store: unknown option \"" + name +
                              "\" (known: lease, max-txn-ops, max-txn-bytes, events-keep)"};
    if (name == "lease") v = positive(name, value, 3600);
    if (name == "max-txn-ops") v = positive(name, value, 1'000'000);
    if (name == "max-txn-bytes") v = positive(name, value, int64_t{1} << 30);
    if (name == "events-keep")
      v = value == "0" ? Result<int64_t>(0) : positive(name, value, int64_t{1} << 40);
    if (!v) return Error{v.error()};
    if (name == "lease") o.lease_ttl_s = *v;
    if (name == "max-txn-ops") o.max_txn_ops = static_cast<size_t>(*v);
    if (name == "max-txn-bytes") o.max_txn_bytes = static_cast<size_t>(*v);
    if (name == "events-keep") o.events_keep = static_cast<uint64_t>(*v);
  }
  return true;
}

// One operation of a commit, before it is encoded: a put, or a delete when `del`.
struct Op {
  std::string key, value;
  bool del = false;
};

}  // namespace

Result<EtcdOptions> parse_etcd_url(const std::string& url) {
  const std::string scheme = "etcd://";
  if (url.rfind(scheme, 0) != 0)
    return Error{"--store " + url + ": expected etcd://HOST:PORT[,HOST:PORT...][/CLUSTER]"};
  EtcdOptions o;
  std::string rest = url.substr(scheme.size());
  if (const auto q = rest.find('?'); q != std::string::npos) {
    if (auto ok = parse_query(rest.substr(q + 1), o); !ok) return Error{ok.error()};
    rest = rest.substr(0, q);
  }
  std::string cluster = "default";
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    cluster = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
    if (cluster.empty() ||
        cluster.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != std::string::npos)
      return Error{"--store " + url + ": the cluster name \"" + cluster +
                   "\" may hold only letters, digits, '.', '_' and '-'"};
  }
  for (const auto& hp : proto::split_list(rest)) {
    const auto colon = hp.rfind(':');
    if (hp.empty() || colon == std::string::npos || colon == 0 || colon + 1 == hp.size() ||
        hp.find_first_not_of("0123456789", colon + 1) != std::string::npos)
      return Error{"--store " + url + ": \"" + hp + "\" is not HOST:PORT"};
    o.endpoints.push_back("http://" + hp);
  }
  if (o.endpoints.empty()) return Error{"--store " + url + ": no etcd endpoint (HOST:PORT)"};
  o.prefix = "/sluice/" + cluster + "/";
  return o;
}

EtcdStore::EtcdStore(EtcdOptions options)
    : options_(std::move(options)), writer_(options_.endpoints), reader_(options_.endpoints) {}

Result<std::unique_ptr<EtcdStore>> EtcdStore::connect(EtcdOptions options) {
  if (options.endpoints.empty()) return Error{"--store: no etcd endpoint given"};
  std::unique_ptr<EtcdStore> s(new EtcdStore(std::move(options)));
  if (auto r = s->writer_.get(s->options_.prefix + "leader"); !r)
    return Error{"etcd at " + s->describe() + " does not answer: " + r.error()};
  return s;
}

EtcdStore::~EtcdStore() {
  stop_writer();
  {
    std::lock_guard lk(renew_mu_);
    stopping_ = true;
  }
  renew_cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  // Handing the leadership over at once: a standby takes over within its poll, not a TTL.
  if (lease_ && !deposed_)
    (void)writer_.call("/v3/lease/revoke", json{{"ID", std::to_string(lease_)}});
}

std::string EtcdStore::describe() const {
  std::string out = "etcd ";
  for (size_t i = 0; i < options_.endpoints.size(); ++i)
    out += (i ? "," : "") + options_.endpoints[i].substr(7);  // without http://
  return out + " under " + options_.prefix;
}

std::string EtcdStore::key(const std::string& kind, uint64_t n) const {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%020llu", static_cast<unsigned long long>(n));
  return options_.prefix + kind + "/" + digits;
}

Result<bool> EtcdStore::campaign(const std::string& me, std::string* leader) {
  const std::string lk = options_.prefix + "leader";
  // 1. Someone leads: follow (or it is us, when called again after winning).
  auto cur = writer_.get(lk);
  if (!cur) return Error{cur.error()};
  if (*cur && lease_ && (*cur)->lease == lease_) return true;
  if (*cur) {
    *leader = (*cur)->value;
    return false;
  }
  // 2. Nobody: a fresh lease and the key, if still nobody took it meanwhile.
  auto lease = writer_.grant(options_.lease_ttl_s);
  if (!lease) return Error{lease.error()};
  json txn{{"compare", json::array({{{"target", "CREATE"},
                                     {"key", base64_encode(lk)},
                                     {"result", "EQUAL"},
                                     {"create_revision", "0"}}})},
           {"success", json::array({EtcdClient::put_op(lk, me, *lease)})},
           {"failure", json::array({EtcdClient::range_op(lk)})}};
  auto r = writer_.call("/v3/kv/txn", txn);
  if (!r) return Error{r.error()};
  if (!r->value("succeeded", false)) {
    const auto& resp = (*r)["responses"];
    if (!resp.empty() && !resp[0]["response_range"].value("kvs", json::array()).empty())
      *leader = EtcdClient::decode_kv(resp[0]["response_range"]["kvs"][0]).value;
    return false;
  }
  lease_ = *lease;
  // 3. Events continue after the last one any leader wrote.
  auto last =
      writer_.call("/v3/kv/range", json{{"key", base64_encode(options_.prefix + "events/")},
                                        {"range_end", base64_encode(options_.prefix + "events0")},
                                        {"sort_order", "DESCEND"},
                                        {"sort_target", "KEY"},
                                        {"limit", "1"}});
  if (!last) return Error{last.error()};
  for (const auto& kv : last->value("kvs", json::array())) {
    const std::string k = EtcdClient::decode_kv(kv).key;
    next_event_ = std::strtoull(k.substr(k.rfind('/') + 1).c_str(), nullptr, 10) + 1;
  }
  renewer_ = std::thread([this] { renew(); });
  return true;
}

// Renews the lease a few times per TTL; when etcd says it is gone, or no renewal got through
// for a whole TTL, this replica can no longer be sure it leads: it steps down.
void EtcdStore::renew() {
  EtcdClient client(options_.endpoints,
                    static_cast<int>(std::max<int64_t>(1, options_.lease_ttl_s)));
  const auto ttl = std::chrono::seconds(options_.lease_ttl_s);
  const auto period = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(200), ttl / 3);
  auto last_ok = std::chrono::steady_clock::now();
  std::unique_lock lk(renew_mu_);
  while (!stopping_ && !deposed_) {
    renew_cv_.wait_for(lk, period, [&] { return stopping_; });
    if (stopping_) break;
    lk.unlock();
    auto r = client.keepalive(lease_);
    lk.lock();
    if (r && *r > 0) {
      last_ok = std::chrono::steady_clock::now();
    } else if (r) {
      step_down("its etcd lease expired (a renewal came too late)");
    } else if (std::chrono::steady_clock::now() - last_ok >= ttl) {
      step_down("its etcd lease could not be renewed for " + std::to_string(options_.lease_ttl_s) +
                " s (" + r.error() + ")");
    }
  }
}

void EtcdStore::step_down(const std::string& why) {
  if (deposed_.exchange(true)) return;
  fail_from_now("this replica is no longer the leader: " + why +
                "; it writes and acknowledges nothing more. Restart it: it rejoins as a standby "
                "(docs/ha.md)");
}

Result<std::vector<StoredJob>> EtcdStore::load_jobs() {
  std::lock_guard lk(read_mu_);
  auto kvs = reader_.range(options_.prefix + "jobs/", options_.prefix + "jobs0");
  if (!kvs) return Error{kvs.error()};
  std::vector<StoredJob> out;
  out.reserve(kvs->size());
  for (auto& kv : *kvs) {
    StoredJob j;
    j.id = std::strtoull(kv.key.substr(kv.key.rfind('/') + 1).c_str(), nullptr, 10);
    const auto nl = kv.value.find('\n');
    if (nl == std::string::npos) return Error{"etcd key " + kv.key + ": not a job record"};
    j.state = kv.value.substr(0, nl);
    j.record = kv.value.substr(nl + 1);
    out.push_back(std::move(j));
  }
  return out;
}

// Event keys are events/<seq> with <seq> zero-padded (key()), so the range is in commit order.
std::string EtcdStore::for_each_event(const std::function<void(const std::string&)>& f) {
  std::lock_guard lk(read_mu_);
  auto kvs = reader_.range(options_.prefix + "events/", options_.prefix + "events0");
  if (!kvs) return kvs.error();
  for (const auto& kv : *kvs) f(kv.value);
  return {};
}

std::optional<std::string> EtcdStore::get_meta(const std::string& k) {
  std::lock_guard lk(read_mu_);
  auto r = reader_.get(options_.prefix + "meta/" + k);
  if (!r || !*r) return std::nullopt;
  return (*r)->value;
}

std::vector<std::pair<std::string, std::string>> EtcdStore::meta_with_prefix(
    const std::string& prefix) {
  std::lock_guard lk(read_mu_);
  std::vector<std::pair<std::string, std::string>> out;
  const std::string from = options_.prefix + "meta/" + prefix;
  std::string end = from;
  end.push_back('\xff');  // every key that starts with `from` (keys are printable)
  auto kvs = reader_.range(from, end);
  if (!kvs) return out;
  for (auto& kv : *kvs) out.emplace_back(kv.key.substr(options_.prefix.size() + 5), kv.value);
  return out;
}

// The batch as one set of operations, one per key (the last write of a key wins: etcd refuses
// a txn that names a key twice), then as few fenced txns as etcd's limits allow.
bool EtcdStore::commit(std::vector<Write>& batch, std::string* error) {
  std::vector<Op> ops;
  std::map<std::string, size_t> at;  // key -> index in ops
  auto add = [&](Op op) {
    auto [it, fresh] = at.emplace(op.key, ops.size());
    if (fresh)
      ops.push_back(std::move(op));
    else
      ops[it->second] = std::move(op);
  };
  for (auto& w : batch) {
    for (auto& j : w.jobs) add({key("jobs", j.id), j.state + "\n" + j.record});
    for (auto& [k, v] : w.meta) add({options_.prefix + "meta/" + k, v});
    for (auto& line : w.events) add({key("events", next_event_++), line});
    for (uint64_t id : w.deleted) add({key("jobs", id), "", true});
  }
  // Retention: once events_keep plus a tenth more are stored, the oldest go in one range
  // delete (the last op: no key of it is written in this commit).
  const uint64_t stored = next_event_ - events_from_;
  const uint64_t keep = options_.events_keep;
  std::string trim_below;
  if (keep > 0 && stored > keep + std::max<uint64_t>(1, keep / 10)) {
    events_from_ = next_event_ - keep;
    trim_below = key("events", events_from_);
  }
  std::vector<json> chunk;
  size_t bytes = 0;
  for (auto& op : ops) {
    const size_t size = op.key.size() + op.value.size() + 32;
    if (size > options_.max_txn_bytes) {
      *error = "a value of " + std::to_string(size) + " bytes (" + op.key +
               ") is over one etcd request (max-txn-bytes " +
               std::to_string(options_.max_txn_bytes) + ", etcd --max-request-bytes)";
      return false;
    }
    if (!chunk.empty() &&
        (chunk.size() >= options_.max_txn_ops || bytes + size > options_.max_txn_bytes)) {
      if (!commit_ops(chunk, error)) return false;
      chunk.clear();
      bytes = 0;
    }
    chunk.push_back(op.del ? EtcdClient::delete_op(op.key) : EtcdClient::put_op(op.key, op.value));
    bytes += size;
  }
  if (!trim_below.empty()) {
    if (chunk.size() >= options_.max_txn_ops) {
      if (!commit_ops(chunk, error)) return false;
      chunk.clear();
    }
    chunk.push_back(EtcdClient::delete_op(options_.prefix + "events/", trim_below));
  }
  return chunk.empty() || commit_ops(chunk, error);
}

bool EtcdStore::commit_ops(std::vector<json>& ops, std::string* error) {
  if (deposed_) {
    *error = "this replica is no longer the leader";
    return false;
  }
  json txn{{"compare", json::array({{{"target", "LEASE"},
                                     {"key", base64_encode(options_.prefix + "leader")},
                                     {"result", "EQUAL"},
                                     {"lease", std::to_string(lease_)}}})},
           {"success", std::move(ops)},
           {"failure", json::array()}};
  auto r = writer_.call("/v3/kv/txn", txn);
  if (!r) {
    // Unknown whether it committed: not acknowledged, and this replica stops leading (a leader
    // that cannot write would hold the lease and serve nothing).
    *error = "etcd did not confirm the write: " + r.error();
    step_down("a write to etcd failed (" + r.error() + ")");
    return false;
  }
  if (!r->value("succeeded", false)) {
    *error =
        "etcd refused the write: the leader key no longer carries this replica's lease (it "
        "expired, or another replica leads now)";
    step_down("etcd refused a write fenced on its lease");
    return false;
  }
  return true;
}

}  // namespace sluice::server
