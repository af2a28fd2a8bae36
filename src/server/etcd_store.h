#pragma once
// The replicated store (docs/ha.md): everything SqliteStore keeps, in etcd under a key prefix,
// and the leader election of the replicas that share it.
//
//   PREFIX/leader          the leading replica's URL, attached to its lease
//   PREFIX/jobs/<id:020>   "<state>\n<record JSON>"
//   PREFIX/meta/<key>      configuration, budgets, next_job_id, node credentials
//   PREFIX/events/<seq:020> one event-log line each, in commit order
//   PREFIX/commit-seq      written by every commit: its version orders pipelined txns
//
// Every commit is an etcd txn conditioned on PREFIX/leader still carrying this replica's lease:
// a replica whose lease expired (it was partitioned, paused, or another took over) cannot
// write, and says so; a submission is acknowledged only after etcd answered that the txn
// succeeded, i.e. a quorum of members has it. Up to `pipeline` commits are in flight at once,
// each txn also conditioned on PREFIX/commit-seq's version, which its predecessor's txn set:
// etcd applies them in commit order or not at all (a txn that overtook its predecessor is
// refused by etcd and sent again once the predecessor succeeded).
#include <atomic>
#include <mutex>

#include "server/etcd_client.h"
#include "server/store.h"

namespace sluice::server {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // "http://host:port"
  std::string prefix = "/sluice/default/";
  // The leader's lease: a silent leader is replaced this long after its last renewal (plus a
  // standby's poll, 100 ms; one whose process died sooner: election.cc). etcd raises a TTL
  // below its own minimum (about 2 s).
  int64_t lease_ttl_s = 2;
  // One txn carries at most this many operations and about this many bytes: etcd refuses more
  // (--max-txn-ops 128 and --max-request-bytes 1.5 MiB by default). A larger commit is split
  // into several txns, each fenced; its writes are acknowledged when all of them succeeded.
  size_t max_txn_ops = 128;
  size_t max_txn_bytes = 1 << 20;
  // The event log keeps the last this many events in etcd (0: every event). Older ones are
  // deleted in batches, in the leader's fenced txns; etcd's --auto-compaction-* then frees
  // their history (docs/ha.md, "The event log").
  uint64_t events_keep = 1'000'000;
  // Commits in flight at once (1: each waits for the previous one's answer).
  size_t pipeline = 1;
  // A standby that reached the leader's API and then finds its port closed (connection
  // refused: the process died) revokes the leader's lease instead of waiting for it to expire
  // (election.cc). false: standbys wait for the lease to expire.
  bool probe_leader = true;
  // A standby that reached the leader's API and then gets no answer from it (/healthz) for this
  // long, while etcd says the leader's lease missed a renewal, revokes that lease (a frozen
  // leader, or its machine died: election.cc). 0: only a refused port or the TTL depose it.
  int silent_leader_ms = 1000;
};

// etcd://HOST:PORT[,HOST:PORT...][/CLUSTER][?lease=S&max-txn-ops=N&max-txn-bytes=N&events-keep=N
//   &pipeline=N&probe-leader=0|1&silent-leader-ms=N]
// CLUSTER (default "default") names the key prefix /sluice/CLUSTER/: several sluice clusters
// may share one etcd.
Result<EtcdOptions> parse_etcd_url(const std::string& url);

class EtcdStore final : public Store {
 public:
  // Checks that etcd answers (a clear error when no endpoint does).
  static Result<std::unique_ptr<EtcdStore>> connect(EtcdOptions options);
  ~EtcdStore() override;

  // One round of the election for `me` (the URL clients reach this replica at): true when this
  // replica leads now (it holds a lease, renewed from now on by a thread, and the leader key);
  // false while another does, whose URL is in *leader and its lease in *leader_lease.
  Result<bool> campaign(const std::string& me, std::string* leader,
                        int64_t* leader_lease = nullptr);
  // The lease was lost after this replica led: it can write no more (every write fails with
  // the reason) and should step down.
  bool deposed() const { return deposed_; }
  int64_t lease() const { return lease_; }
  const EtcdOptions& options() const { return options_; }
  // Revokes another replica's lease (its process died: election.cc); false when it was gone.
  Result<bool> revoke(int64_t lease) { return writer_.revoke(lease); }
  // Another replica's lease, as etcd sees it now (election.cc: did it miss a renewal?).
  Result<EtcdClient::LeaseLeft> lease_left(int64_t lease) { return writer_.time_to_live(lease); }

  Result<std::vector<StoredJob>> load_jobs() override;
  std::optional<std::string> get_meta(const std::string& key) override;
  std::vector<std::pair<std::string, std::string>> meta_with_prefix(
      const std::string& prefix) override;
  std::string for_each_event(const std::function<void(const std::string&)>& f) override;
  std::string describe() const override;

 private:
  explicit EtcdStore(EtcdOptions options);
  bool commit(std::vector<Write>& batch, std::string* error) override;
  size_t pipeline_depth() const override { return options_.pipeline; }
  Send stage(std::vector<Write>& batch) override;
  // The batch's operations in txns within etcd's limits; false with *error when one value is
  // over them.
  bool chunk(std::vector<Write>& batch, std::vector<std::vector<nlohmann::json>>* txns,
             std::string* error);
  // One fenced txn that expects commit-seq at version `seq` and moves it on.
  bool send_txn(EtcdClient& client, std::vector<nlohmann::json>& ops, int64_t seq,
                std::string* error);
  void renew();
  void step_down(const std::string& why);
  std::string key(const std::string& kind, uint64_t n) const;

  EtcdOptions options_;
  EtcdClient writer_;  // the writer thread's (and the election's, before start())
  std::mutex read_mu_;
  EtcdClient reader_;  // load_jobs() and get_meta(), under read_mu_
  int64_t lease_ = 0;
  uint64_t next_event_ = 1;
  uint64_t events_from_ = 1;  // events below this one were deleted (events_keep)
  int64_t lease_ttl_s_ = 0;   // as etcd granted it
  // Pipelining: the senders' connections (a flight uses flights_ % pipeline), the version of
  // commit-seq the next staged txn expects, and the one the last successful txn left.
  std::vector<std::unique_ptr<EtcdClient>> senders_;
  uint64_t flights_ = 0;
  int64_t next_seq_ = 0;
  std::mutex seq_mu_;
  std::condition_variable seq_cv_;
  int64_t applied_seq_ = 0;
  std::atomic<bool> deposed_{false};
  std::mutex renew_mu_;
  std::condition_variable renew_cv_;
  bool stopping_ = false;
  std::thread renewer_;
};

}  // namespace sluice::server
