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
    Result<int64_t> v =
        Error{"--store: unknown option \"" + name +
              "\" (known: lease, max-txn-ops, max-txn-bytes, events-keep, pipeline, probe-leader, "
              "silent-leader-ms)"};
    if (name == "lease") v = positive(name, value, 3600);
    if (name == "max-txn-ops") v = positive(name, value, 1'000'000);
    if (name == "max-txn-ops" && v && *v < 2)
      v = Error{"--store: max-txn-ops=" + value + ": at least 2 (a commit adds one operation)"};
    if (name == "pipeline") v = positive(name, value, 16);
    if (name == "probe-leader")
      v = value == "0" || value == "1" ? Result<int64_t>(value == "1")
                                       : Error{"--store: probe-leader=" + value + ": 0 or 1"};
    if (name == "silent-leader-ms")
      v = value == "0" ? Result<int64_t>(0) : positive(name, value, 3'600'000);
    if (name == "silent-leader-ms" && v && *v > 0 && *v < 300)
      v = Error{"--store: silent-leader-ms=" + value +
                ": 0 (off) or at least 300 (a probe waits up to 250 ms for an answer)"};
    if (name == "max-txn-bytes") v = positive(name, value, int64_t{1} << 30);
    if (name == "events-keep")
      v = value == "0" ? Result<int64_t>(0) : positive(name, value, int64_t{1} << 40);
    if (!v) return Error{v.error()};
    if (name == "lease") o.lease_ttl_s = *v;
    if (name == "max-txn-ops") o.max_txn_ops = static_cast<size_t>(*v);
    if (name == "max-txn-bytes") o.max_txn_bytes = static_cast<size_t>(*v);
    if (name == "events-keep") o.events_keep = static_cast<uint64_t>(*v);
    if (name == "pipeline") o.pipeline = static_cast<size_t>(*v);
    if (name == "probe-leader") o.probe_leader = *v != 0;
    if (name == "silent-leader-ms") o.silent_leader_ms = static_cast<int>(*v);
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
    : options_(std::move(options)), writer_(options_.endpoints), reader_(options_.endpoints) {
  for (size_t i = 0; i < std::max<size_t>(1, options_.pipeline); ++i)
    senders_.push_back(std::make_unique<EtcdClient>(options_.endpoints));
}

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
  if (lease_ && !deposed_) (void)writer_.revoke(lease_);
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

Result<bool> EtcdStore::campaign(const std::string& me, std::string* leader,
                                 int64_t* leader_lease) {
  int64_t unused = 0;
  if (!leader_lease) leader_lease = &unused;
  const std::string lk = options_.prefix + "leader";
  // 1. Someone leads: follow (or it is us, when called again after winning).
  auto cur = writer_.get(lk);
  if (!cur) return Error{cur.error()};
  if (*cur && lease_ && (*cur)->lease == lease_) return true;
  if (*cur) {
    *leader = (*cur)->value;
    *leader_lease = (*cur)->lease;
    return false;
  }
  // 2. Nobody: a fresh lease and the key, if still nobody took it meanwhile; the same txn reads
  // where the commit sequence and the event log stand.
  auto lease = writer_.grant(options_.lease_ttl_s);
  if (!lease) return Error{lease.error()};
  json last_event{{"key", base64_encode(options_.prefix + "events/")},
                  {"range_end", base64_encode(options_.prefix + "events0")},
                  {"sort_order", "DESCEND"},
                  {"sort_target", "KEY"},
                  {"limit", "1"}};
  json txn{{"compare", json::array({{{"target", "CREATE"},
                                     {"key", base64_encode(lk)},
                                     {"result", "EQUAL"},
                                     {"create_revision", "0"}}})},
           {"success", json::array({EtcdClient::put_op(lk, me, lease->id),
                                    EtcdClient::range_op(options_.prefix + "commit-seq"),
                                    json{{"request_range", std::move(last_event)}}})},
           {"failure", json::array({EtcdClient::range_op(lk)})}};
  auto r = writer_.call("/v3/kv/txn", txn);
  if (!r) return Error{r.error()};
  const json& resp = r->value("responses", json::array());
  auto first_kv = [&](size_t i) -> std::optional<EtcdKv> {
    if (i >= resp.size()) return std::nullopt;
    const json kvs = resp[i].value("response_range", json::object()).value("kvs", json::array());
    if (kvs.empty()) return std::nullopt;
    return EtcdClient::decode_kv(kvs[0]);
  };
  if (!r->value("succeeded", false)) {
    (void)writer_.revoke(lease->id);  // not needed: another replica won
    if (auto kv = first_kv(0)) {
      *leader = kv->value;
      *leader_lease = kv->lease;
    }
    return false;
  }
  lease_ = lease->id;
  lease_ttl_s_ = lease->ttl_s;
  if (auto seq = first_kv(1)) next_seq_ = applied_seq_ = seq->version;
  // 3. Events continue after the last one any leader wrote.
  if (auto kv = first_kv(2))
    next_event_ = std::strtoull(kv->key.substr(kv->key.rfind('/') + 1).c_str(), nullptr, 10) + 1;
  renewer_ = std::thread([this] { renew(); });
  return true;
}

// Renews the lease a few times per TTL; when etcd says it is gone, or no renewal got through
// for a whole TTL, this replica can no longer be sure it leads: it steps down.
void EtcdStore::renew() {
  EtcdClient client(options_.endpoints, static_cast<int>(std::max<int64_t>(1, lease_ttl_s_)));
  const auto ttl = std::chrono::seconds(lease_ttl_s_);
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
      // Expired, or revoked by a standby that found this replica gone (its port refused, or it
      // was silent past silent-leader-ms and missed a renewal: frozen, or cut off).
      step_down("its etcd lease is gone (it expired, a renewal came too late, or a standby "
                "revoked it after this replica was silent or unreachable)");
    } else if (std::chrono::steady_clock::now() - last_ok >= ttl) {
      step_down("its etcd lease could not be renewed for " + std::to_string(lease_ttl_s_) + " s (" +
                r.error() + ")");
    }
  }
}

void EtcdStore::step_down(const std::string& why) {
  if (deposed_.exchange(true)) return;
  {
    std::lock_guard lk(seq_mu_);  // a txn waiting for its predecessor gives up
  }
  seq_cv_.notify_all();
  fail_from_now("this replica is no longer the leader: " + why +
                "; it writes and acknowledges nothing more. Restart it: it rejoins as a standby "
                "(docs/ha.md)");
}

Result<std::vector<StoredJob>> EtcdStore::load_jobs() {
  std::lock_guard lk(read_mu_);
  auto kvs = reader_.range(options_.prefix + "jobs/", options_.prefix + "jobs0", 500);
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
  auto kvs = reader_.range(options_.prefix + "events/", options_.prefix + "events0", 2000);
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
// a txn that names a key twice), then as few txns as etcd's limits allow (one operation of each
// is kept for commit-seq). Runs on the writer thread, in commit order.
bool EtcdStore::chunk(std::vector<Write>& batch, std::vector<std::vector<json>>* txns,
                      std::string* error) {
  std::vector<Op> ops;
  std::map<std::string, size_t> at;  // key -> index in ops
  auto add = [&](Op op) {
    auto [it, fresh] = at.emplace(op.key, ops.size());
    if (fresh)
      ops.push_back(std::move(op));
    else
      ops[it->second] = std::move(op);
  };
  const uint64_t first_event = next_event_;
  for (auto& w : batch) {
    for (auto& j : w.jobs) add({key("jobs", j.id), j.state + "\n" + j.record});
    for (auto& [k, v] : w.meta) add({options_.prefix + "meta/" + k, v});
    for (auto& line : w.events) add({key("events", next_event_++), line});
    for (uint64_t id : w.deleted) add({key("jobs", id), "", true});
  }
  const size_t max_ops = options_.max_txn_ops - 1;
  const size_t max_bytes = options_.max_txn_bytes - 64;
  std::vector<json> txn;
  size_t bytes = 0;
  for (auto& op : ops) {
    const size_t size = op.key.size() + op.value.size() + 32;
    if (size > max_bytes) {
      next_event_ = first_event;  // nothing of it is sent
      *error = "a value of " + std::to_string(size) + " bytes (" + op.key +
               ") is over one etcd request (max-txn-bytes " +
               std::to_string(options_.max_txn_bytes) + ", etcd --max-request-bytes)";
      return false;
    }
    if (!txn.empty() && (txn.size() >= max_ops || bytes + size > max_bytes)) {
      txns->push_back(std::move(txn));
      txn.clear();
      bytes = 0;
    }
    txn.push_back(op.del ? EtcdClient::delete_op(op.key) : EtcdClient::put_op(op.key, op.value));
    bytes += size;
  }
  // Retention: once events_keep plus a tenth more are stored, the oldest go in one range
  // delete (the last op: no key of it is written in this commit).
  const uint64_t stored = next_event_ - events_from_;
  const uint64_t keep = options_.events_keep;
  if (keep > 0 && stored > keep + std::max<uint64_t>(1, keep / 10)) {
    events_from_ = next_event_ - keep;
    if (txn.size() >= max_ops) {
      txns->push_back(std::move(txn));
      txn.clear();
    }
    txn.push_back(EtcdClient::delete_op(options_.prefix + "events/", key("events", events_from_)));
  }
  if (!txn.empty()) txns->push_back(std::move(txn));
  return true;
}

bool EtcdStore::commit(std::vector<Write>& batch, std::string* error) {
  return stage(batch)(error);
}

// The txns get their places in the commit sequence now, in commit order; the returned part
// sends them one after the other on this flight's connection.
Store::Send EtcdStore::stage(std::vector<Write>& batch) {
  auto txns = std::make_shared<std::vector<std::vector<json>>>();
  std::string why;
  if (!chunk(batch, txns.get(), &why))
    return [why](std::string* error) {
      *error = why;
      return false;
    };
  const int64_t first_seq = next_seq_;
  next_seq_ += static_cast<int64_t>(txns->size());
  EtcdClient* client = senders_[flights_++ % senders_.size()].get();
  return [this, txns, first_seq, client](std::string* error) {
    for (size_t i = 0; i < txns->size(); ++i)
      if (!send_txn(*client, (*txns)[i], first_seq + static_cast<int64_t>(i), error)) return false;
    return true;
  };
}

bool EtcdStore::send_txn(EtcdClient& client, std::vector<json>& ops, int64_t seq,
                         std::string* error) {
  const std::string leader = options_.prefix + "leader", seq_key = options_.prefix + "commit-seq";
  ops.push_back(EtcdClient::put_op(seq_key, ""));
  const json txn{
      {"compare", json::array({{{"target", "LEASE"},
                                {"key", base64_encode(leader)},
                                {"result", "EQUAL"},
                                {"lease", std::to_string(lease_)}},
                               {{"target", "VERSION"},
                                {"key", base64_encode(seq_key)},
                                {"result", "EQUAL"},
                                {"version", std::to_string(seq)}}})},
      {"success", std::move(ops)},
      {"failure", json::array({EtcdClient::range_op(leader), EtcdClient::range_op(seq_key)})}};
  // Bounded: a txn refused for its place in the sequence waits for its predecessor and is sent
  // again, three times at most.
  for (int attempt = 0;; ++attempt) {
    if (deposed_) {
      *error = "this replica is no longer the leader";
      return false;
    }
    auto r = client.call("/v3/kv/txn", txn);
    if (!r) {
      // Unknown whether it committed: not acknowledged, and this replica stops leading (a
      // leader that cannot write would hold the lease and serve nothing).
      *error = "etcd did not confirm the write: " + r.error();
      step_down("a write to etcd failed (" + r.error() + ")");
      return false;
    }
    if (r->value("succeeded", false)) {
      {
        std::lock_guard lk(seq_mu_);
        applied_seq_ = std::max(applied_seq_, seq + 1);
      }
      seq_cv_.notify_all();
      return true;
    }
    // Which compare failed: the failure branch read the leader key and commit-seq.
    const json resp = r->value("responses", json::array());
    auto read = [&](size_t i) {
      const json kvs =
          i < resp.size()
              ? resp[i].value("response_range", json::object()).value("kvs", json::array())
              : json::array();
      return kvs.empty() ? EtcdKv{} : EtcdClient::decode_kv(kvs[0]);
    };
    const int64_t lease = read(0).lease, version = read(1).version;
    if (lease != lease_) {
      *error =
          "etcd refused the write: the leader key no longer carries this replica's lease (it "
          "expired, or another replica leads now)";
      step_down("etcd refused a write fenced on its lease");
      return false;
    }
    if (version < seq && attempt < 3) {  // the txn before it has not been applied yet
      std::unique_lock lk(seq_mu_);
      seq_cv_.wait_for(lk, std::chrono::seconds(15),
                       [&] { return applied_seq_ >= seq || deposed_; });
      continue;
    }
    *error = "etcd refused the write: the commit sequence is at " + std::to_string(version) +
             ", this txn expected " + std::to_string(seq) + " (another writer?)";
    step_down("its commit sequence in etcd is not where it left it");
    return false;
  }
}

}  // namespace sluice::server
