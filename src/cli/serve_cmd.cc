// `sluice serve` (the control plane) and `sluice up` (server + local agents in one process,
// optionally with the demo).
#include <httplib.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/agent.h"
#include "agent/pod_identity.h"
#include "cli/client_term.h"
#include "cli/commands.h"
#include "cli/demo_assets.h"
#include "cli/state_home.h"
#include "server/election.h"
#include "server/otlp_export.h"
#include "server/server.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

// Blocks SIGINT/SIGTERM/SIGHUP in every thread (call before starting any); wait_for_signal()
// takes them.
void block_signals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, set, nullptr);
}

// Waits for SIGINT/SIGTERM, or `seconds` (<= 0: forever). Returns the signal, or 0 on timeout
// or after a SIGHUP, which reloads the server's --config files (a bad one is refused and logged).
int wait_for_signal(const sigset_t& set, double seconds, server::Server& srv) {
  int sig = 0;
  if (seconds <= 0) {
    do {
      sigwait(&set, &sig);
      if (sig == SIGHUP) srv.reload_config();
    } while (sig == SIGHUP);
    return sig;
  }
  timespec ts{
      static_cast<time_t>(seconds),
      static_cast<long>((seconds - static_cast<double>(static_cast<time_t>(seconds))) * 1e9)};
  sig = sigtimedwait(&set, nullptr, &ts);
  if (sig == SIGHUP) {
    srv.reload_config();
    return 0;
  }
  return sig < 0 ? 0 : sig;
}

struct ServeArgs {
  server::ServeOptions opt;
  double agent_timeout_s = 10;
  double fence_margin_s = 2;
  std::string otlp_endpoint;  // empty: $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else no traces
};

void add_server_options(CLI::App* cmd, ServeArgs& a) {
  cmd->add_option("--listen", a.opt.listen, "HOST:PORT to serve the API on (port 0: any free)")
      ->capture_default_str();
  cmd->add_option("--data-dir", a.opt.data_dir, "SQLite store and event log directory")
      ->capture_default_str();
  cmd->add_option("--store", a.opt.store,
                  "etcd://HOST:PORT[,HOST:PORT...][/CLUSTER][?lease=S]: keep everything in etcd "
                  "instead of --data-dir; several replicas elect one leader (docs/ha.md)");
  cmd->add_option("--advertise", a.opt.advertise,
                  "With --store etcd://: the URL clients reach this replica at, which standbys "
                  "name as the leader (default: http://LISTEN)");
  cmd->add_option("--agent-timeout", a.agent_timeout_s,
                  "Seconds without a sync before a node is NotReady; also the agents' lease: an "
                  "agent that cannot sync this long stops its pods, and a silent node's jobs "
                  "are requeued this + their checkpoint grace + --fence-margin after its last "
                  "sync (docs/agent.md, Fencing)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--fence-margin", a.fence_margin_s,
                  "Seconds added to a silent node's lease and grace before its jobs are "
                  "requeued (covers the agent's tick and signal delivery)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--min-free-disk", a.opt.min_free_disk_mib,
                  "MiB: below this much free space in --data-dir's file system, requests that "
                  "would change the store (submit, cancel, hold, release, requeue) get 507 and "
                  "change nothing (0: no floor)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--public-metrics", a.opt.public_metrics,
                "/metrics writes every namespace's series (GPU-seconds, budgets) without a token; "
                "else a scraper sees those of its token's namespaces (docs/api.md, Metrics)");
  cmd->add_option("--namespace-max-pending", a.opt.state.namespace_max_pending,
                  "Pending jobs one namespace may have; a submission beyond gets 429 (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_option("--namespace-submit-rate", a.opt.state.namespace_submit_rate,
                  "Jobs a second one namespace may submit, in bursts of --namespace-submit-burst; "
                  "faster gets 429 with a Retry-After (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--namespace-submit-burst", a.opt.state.namespace_submit_burst,
                  "Jobs one namespace may submit at once (a job array counts its tasks)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->add_option("--caller-max-in-flight", a.opt.caller_max_in_flight,
                  "Requests of one caller (token) between header and answer; beyond: 429 "
                  "before the body is read (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  cmd->add_option("--caller-max-running", a.opt.caller_max_running,
                  "Requests of one caller handled at once; more wait their turn, callers are "
                  "served in turn (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 20));
  cmd->add_option("--heartbeat-ms", a.opt.state.heartbeat_ms, "Agent sync interval to ask for")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}));
  cmd->add_option("--cycle-interval-ms", a.opt.cycle_interval_ms,
                  "A scheduling cycle at least this often (events trigger more)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{10}, int64_t{60'000}));
  cmd->add_option("--keep-finished-jobs", a.opt.state.keep_finished_jobs,
                  "Finished jobs kept for job views (memory and store); beyond this many the "
                  "oldest are dropped, their events stay in the event log (0: keep all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000}));
  cmd->add_option("--history-max-jobs", a.opt.state.history_max_jobs,
                  "Jobs `sluice history` keeps (rebuilt from the event log at startup); beyond "
                  "this many the rows of the jobs that ended first are dropped")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  cmd->add_option("--log-max-bytes", a.opt.log_max_bytes,
                  "The most of a pod's log one `sluice logs` answer carries; a longer log comes "
                  "back as its head and its end with a \"[... N bytes cut ...]\" line")
      ->capture_default_str()
      ->check(CLI::Range(size_t{4096}, size_t{1} << 30));
  cmd->add_option("--dashboard-sample-ms", a.opt.dashboard_sample_ms,
                  "How often the web dashboard's history takes a sample (docs/dashboard.md)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3'600'000}));
  cmd->add_option("--dashboard-samples", a.opt.dashboard_samples,
                  "Samples the dashboard's history keeps (memory: a few KB each)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{2}, size_t{100'000}));
  cmd->add_option("--event-log-max-bytes", a.opt.sqlite.event_log.max_bytes,
                  "DATA/events.jsonl is rotated (to events.jsonl.1, ...) at this size; 0: never")
      ->capture_default_str();
  cmd->add_option("--event-log-keep", a.opt.sqlite.event_log.keep,
                  "Rotated event log files kept (events.jsonl.1 the newest)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--events-keep", a.opt.sqlite.max_events,
                  "Events the database keeps, the newest (`sluice history` is rebuilt from them "
                  "at startup; etcd: the store URL's events-keep); 0: all")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--fresh-store", a.opt.sqlite.fresh,
                "Start with an empty database although the data directory's event log shows "
                "earlier jobs (the database was lost); job ids continue after the event log's");
  cmd->add_flag("--quiet", a.opt.quiet, "No log lines on stderr");
  cmd->add_option("--otlp-endpoint", a.otlp_endpoint,
                  "Send the jobs' OpenTelemetry traces (OTLP/HTTP, JSON) to this URL, e.g. "
                  "http://127.0.0.1:4318/v1/traces (default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
                  "else $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else none)");
}

// The trace exporter, when an endpoint is configured; the state's span sink holds it, so it
// lives as long as the server and sends what is queued when the server goes.
Result<bool> start_tracing(ServeArgs& a) {
  std::string endpoint =
      a.otlp_endpoint.empty() ? server::otlp_endpoint_from_env() : a.otlp_endpoint;
  if (endpoint.empty()) return false;
  server::OtlpOptions o;
  o.endpoint = endpoint;
  if (!a.opt.quiet) o.log = [](const std::string& line) { std::cerr << "serve: " << line << "\n"; };
  auto ex = server::OtlpExporter::create(std::move(o));
  if (!ex) return Error{ex.error()};
  std::shared_ptr<server::OtlpExporter> shared = std::move(*ex);
  a.opt.state.span_sink = [shared](std::vector<server::Span> spans) {
    shared->add(std::move(spans));
  };
  std::cerr << "serve: traces to " << endpoint << " (OTLP/HTTP, JSON)\n";
  return true;
}

Result<std::unique_ptr<server::Server>> start_server(
    ServeArgs& a, std::unique_ptr<server::Store> store = nullptr) {
  a.opt.state.agent_timeout_ns = static_cast<TimeNs>(a.agent_timeout_s * 1e9);
  a.opt.state.fence_margin_ns = static_cast<TimeNs>(a.fence_margin_s * 1e9);
  // An agent syncs about once a heartbeat (a long poll); its lease must span several.
  if (a.opt.state.agent_timeout_ns < 3 * a.opt.state.heartbeat_ms * 1'000'000)
    return Error{"--agent-timeout " + server::format_double(a.agent_timeout_s) +
                 " s is shorter than 3 heartbeats (--heartbeat-ms " +
                 std::to_string(a.opt.state.heartbeat_ms) +
                 "): agents would lose their lease and stop their pods between two syncs"};
  if (auto t = start_tracing(a); !t) return Error{t.error()};
  auto srv = server::Server::create(a.opt, std::move(store));
  if (!srv) return srv;
  for (const auto& n : (*srv)->notes()) print_err("serve: " + n + "\n");
  (*srv)->start();
  return srv;
}

void log_line(const std::string& line) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  print_err(std::string(buf) + " serve: " + line + "\n");  // a line may quote a request
}

// --store etcd://: waits as a standby until this replica leads (0 and a null store when a
// signal came first), then the store to serve with.
Result<std::unique_ptr<server::Store>> elect(ServeArgs& a, const sigset_t& set, int* sig) {
  auto eo = server::parse_etcd_url(a.opt.store);
  if (!eo) return Error{eo.error()};
  auto store = server::EtcdStore::connect(std::move(*eo));
  if (!store) return Error{store.error()};
  server::ElectionOptions o;
  const auto colon = a.opt.listen.rfind(':');
  if (colon == std::string::npos) return Error{"--listen " + a.opt.listen + ": expected HOST:PORT"};
  o.host = a.opt.listen.substr(0, colon);
  o.port = std::atoi(a.opt.listen.c_str() + colon + 1);
  o.advertise = a.opt.advertise;
  o.stop_requested = [&] {
    timespec zero{0, 0};
    const int s = sigtimedwait(&set, nullptr, &zero);
    if (s == SIGINT || s == SIGTERM) *sig = s;
    return *sig != 0;
  };
  if (!a.opt.quiet) o.log = log_line;
  auto won = server::wait_for_leadership(std::move(*store), std::move(o));
  if (!won) return Error{won.error()};
  // One line per takeover, like "state loaded in N ms" (also with --quiet: how a failover
  // went, bench/ha/failover_bench.py counts them).
  if (won->store && !won->took_over.empty())
    std::cerr << "serve: took over: " << won->took_over << "\n";
  a.opt.listen = a.opt.listen.substr(0, colon + 1) + std::to_string(won->port);
  return std::unique_ptr<server::Store>(std::move(won->store));
}

int run_serve(ServeArgs& a) {
  sigset_t set;
  block_signals(&set);
  std::unique_ptr<server::Store> store;
  if (!a.opt.store.empty()) {
    int sig = 0;
    auto elected = elect(a, set, &sig);
    if (!elected) {
      std::cerr << "error: " << elected.error() << "\n";
      return 1;
    }
    if (!*elected) return 0;  // stopped while a standby
    store = std::move(*elected);
  }
  auto srv = start_server(a, std::move(store));
  if (!srv) {
    std::cerr << "error: " << srv.error() << "\n";
    return 1;
  }
  std::cerr << "sluice serve: API on " << (*srv)->url() << " (data in "
            << (a.opt.store.empty() ? a.opt.data_dir : a.opt.store) << "); stop with Ctrl-C\n";
  // A replica that lost the leadership exits (status 3) for its supervisor to restart it as a
  // standby; it checks four times a second.
  int sig = 0;
  while (sig == 0) {
    sig = wait_for_signal(set, a.opt.store.empty() ? 0 : 0.25, **srv);
    if (sig == 0 && (*srv)->must_step_down()) {
      log_line("stepping down: " + (*srv)->step_down_reason());
      (*srv)->stop();
      return 3;
    }
  }
  std::cerr << "sluice serve: signal " << sig << ", stopping\n";
  (*srv)->stop();
  return 0;
}

// --- sluice up -------------------------------------------------------------------------------

struct UpArgs {
  ServeArgs serve;
  bool demo = false;
  int nodes = 1;
  std::string gpus = "fake:8xH100";
  double exit_after_s = 0;
  std::vector<std::string> pod_uids;  // --pod-uid NS=UID[:GID], as `sluice agent`'s
  bool pods_as_agent = false;
};

// Who `sluice up`'s pods run as, said once at start: a root `up` runs them as an unprivileged
// uid per namespace, which cannot enter root's own (0700) directories, so a first
// `sluice run` from /root fails (issue 42). Empty when the pods run as the caller.
std::string up_pod_user_note(const agent::IsolationOptions& iso) {
  if (::geteuid() != 0 || iso.drop_privileges == 0) return {};
  const auto it = iso.identity.namespaces.find("default");
  const uint32_t uid = it != iso.identity.namespaces.end()
                           ? it->second.uid
                           : agent::hashed_namespace_uid("default", iso.identity.range_first,
                                                         iso.identity.range_last);
  return "pods: run as an unprivileged user per namespace, not root (namespace \"default\": uid " +
         std::to_string(uid) +
         "); run jobs from a directory that user may enter, such as /tmp, or start with "
         "--pod-uid default=UID (one of your users) or --pods-as-agent (as root, no isolation)";
}

struct LocalGpus {
  int count = 8;
  std::string model = "H100";
};

// What the local agents will report (fake:COUNTxMODEL only).
LocalGpus local_gpus(const std::string& gpus_spec) {
  LocalGpus g;
  if (gpus_spec.rfind("fake:", 0) == 0) {
    const std::string s = gpus_spec.substr(5);
    const auto x = s.find('x');
    if (x != std::string::npos) {
      try {
        g.count = std::stoi(s.substr(0, x));
      } catch (...) {
      }
      g.model = s.substr(x + 1);
      g.model = g.model.substr(0, g.model.find_first_of(":,"));
    }
  }
  return g;
}

// One node group mirroring the local agents.
std::string local_cluster_doc(int nodes, const std::string& gpus_spec) {
  const LocalGpus g = local_gpus(gpus_spec);
  return "apiVersion: sluice.dev/v1alpha1\nkind: Cluster\nmetadata: {name: local}\nspec:\n"
         "  nodeGroups:\n  - namePrefix: local-\n    count: " +
         std::to_string(nodes) +
         "\n    cpu: 16\n    memory: 64Gi\n    gpus: {count: " + std::to_string(g.count) +
         ", model: " + g.model + "}\n";
}

// The local nodes and one queue over them.
std::string local_cluster_yaml(int nodes, const std::string& gpus_spec) {
  const LocalGpus g = local_gpus(gpus_spec);
  return local_cluster_doc(nodes, gpus_spec) +
         "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: "
         "{name: default}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\n"
         "metadata: {name: default}\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n"
         "  - coveredResources: [nvidia.com/gpu, cpu, memory]\n    flavors:\n    - name: default\n"
         "      resources:\n      - {name: nvidia.com/gpu, nominalQuota: " +
         std::to_string(g.count * nodes) +
         "}\n      - {name: cpu, nominalQuota: " + std::to_string(16 * nodes) +
         "}\n      - {name: memory, nominalQuota: " + std::to_string(64 * nodes) +
         "Gi}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
         "metadata: {name: default, namespace: default}\nspec: {clusterQueue: default}\n";
}

// Whether any document of the files is a Cluster. Unreadable files count as having one: the
// server's loader then reports them with file:line.
bool has_cluster_doc(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    try {
      for (const auto& doc : YAML::LoadAllFromFile(f))
        if (doc.IsMap() && doc["kind"] && doc["kind"].IsScalar() &&
            doc["kind"].Scalar() == "Cluster")
          return true;
    } catch (const std::exception&) {
      return true;
    }
  }
  return false;
}

// The demo's job documents grouped by their submitTime offset (seconds).
std::map<double, std::vector<std::string>> demo_schedule() {
  std::map<double, std::vector<std::string>> out;
  for (const auto& doc : YAML::LoadAll(kDemoJobs)) {
    const double at = doc["spec"]["submitTime"].as<double>(0);
    YAML::Emitter e;
    e << doc;
    out[at].push_back(e.c_str());
  }
  return out;
}

// One line of job counts per state, printed when it changed since the last one.
void print_status(httplib::Client& cli, double t, std::string& last) {
  auto r = cli.Get("/v1/jobs?limit=1000");
  if (!r || r->status != 200) return;
  std::map<std::string, int> by_state;
  int preemptions = 0;
  const json body = json::parse(r->body, nullptr, false);
  if (body.is_discarded()) return;
  for (const auto& j : body["jobs"]) {
    by_state[j["state"].get<std::string>()]++;
    preemptions += j["preemptions"].get<int>();
  }
  std::string line;
  for (const auto& [s, n] : by_state) line += " " + s + "=" + std::to_string(n);
  line += " preemptions=" + std::to_string(preemptions);
  if (line == last) return;
  last = line;
  std::printf("[%5.1fs]%s\n", t, line.c_str());
  std::fflush(stdout);
}

void print_jobs_table(httplib::Client& cli) {
  auto r = cli.Get("/v1/jobs?limit=1000");
  if (!r || r->status != 200) return;
  const json body = json::parse(r->body, nullptr, false);
  if (body.is_discarded()) return;
  const json& jobs = body["jobs"];
  std::printf("\n%-4s %-10s %-9s %-12s %-10s %-5s %-6s %s\n", "ID", "NAME", "NAMESPACE", "QUEUE",
              "STATE", "GPUS", "PREEMPT", "NODES / REASON");
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    const auto& j = *it;
    std::string where;
    for (const auto& p : j["placement"])
      where += (where.empty() ? "" : ",") + p["node"].get<std::string>();
    if (j["state"] != "running" && !j["reason"].is_null()) where = j["reason"].get<std::string>();
    if (where.size() > 70) where = where.substr(0, 67) + "...";
    std::printf(
        "%-4lld %-10s %-9s %-12s %-10s %-5lld %-6d %s\n",
        static_cast<long long>(j["id"].get<int64_t>()), j["name"].get<std::string>().c_str(),
        j["namespace"].get<std::string>().c_str(), j["cluster_queue"].get<std::string>().c_str(),
        j["state"].get<std::string>().c_str(), static_cast<long long>(j["gpus"].get<int64_t>()),
        j["preemptions"].get<int>(), where.c_str());
  }
  std::fflush(stdout);
}

int run_up(UpArgs& a) {
  if (!a.serve.opt.store.empty()) {
    std::cerr << "error: sluice up keeps its store in --data-dir (SQLite); replicated servers "
                 "on etcd are started with `sluice serve --store etcd://...` (docs/ha.md)\n";
    return 2;
  }
  sigset_t set;
  block_signals(&set);
  if (a.serve.opt.data_dir.empty()) {
    a.serve.opt.data_dir = up_state_dir();
    if (a.serve.opt.data_dir.empty()) {
      std::cerr << "error: no --data-dir, and neither XDG_STATE_HOME nor HOME names a directory\n";
      return 1;
    }
    std::printf("sluice up: state in %s (--data-dir chooses another)\n",
                a.serve.opt.data_dir.c_str());
    std::fflush(stdout);
  }
  std::error_code ec;
  std::filesystem::create_directories(a.serve.opt.data_dir, ec);
  if (ec) {
    std::cerr << "error: cannot create " << a.serve.opt.data_dir << ": " << ec.message() << "\n";
    return 1;
  }
  // 1. Configuration: the demo's, or one queue over the local nodes, unless --config is given.
  if (a.serve.opt.config_files.empty()) {
    const std::string path = a.serve.opt.data_dir + "/up-config.yaml";
    std::ofstream f(path);
    if (a.demo) {
      a.nodes = 2;
      a.gpus = "fake:4xH100";
      f << kDemoCluster << "---\n" << kDemoQueues;
    } else {
      f << local_cluster_yaml(a.nodes, a.gpus);
    }
    if (!f) {
      std::cerr << "error: cannot write " << path << "\n";
      return 1;
    }
    a.serve.opt.config_files = {path};
  } else if (!has_cluster_doc(a.serve.opt.config_files)) {
    // Queues without nodes (Kueue's files, where Kubernetes has the nodes): the local nodes
    // are the cluster.
    const std::string path = a.serve.opt.data_dir + "/up-cluster.yaml";
    std::ofstream f(path);
    f << local_cluster_doc(a.nodes, a.gpus);
    if (!f) {
      std::cerr << "error: cannot write " << path << "\n";
      return 1;
    }
    a.serve.opt.config_files.push_back(path);
    std::printf("no Cluster in --config: the %d local node(s) are the cluster (%s)\n", a.nodes,
                path.c_str());
  }
  auto srv = start_server(a.serve);
  if (!srv) {
    std::cerr << "error: " << srv.error() << "\n";
    return 1;
  }
  const std::string url = (*srv)->url();
  // 2. Local agents, one per node, in this process.
  agent::IsolationOptions isolation;
  for (const auto& spec : a.pod_uids) {
    auto entry = agent::parse_pod_uid(spec);
    if (!entry) {
      std::cerr << "error: --pod-uid: " << entry.error() << "\n";
      (*srv)->stop();
      return 1;
    }
    isolation.identity.namespaces[entry->first] = entry->second;
  }
  if (a.pods_as_agent) isolation.drop_privileges = 0;
  std::vector<std::unique_ptr<agent::Agent>> agents;
  for (int i = 0; i < a.nodes; ++i) {
    agent::AgentOptions o;
    o.server_url = url;
    o.node = "local-" + std::to_string(i);
    o.gpus_spec = a.gpus;
    o.state_dir = a.serve.opt.data_dir + "/agent-" + o.node;
    o.heartbeat_ms = a.serve.opt.state.heartbeat_ms;
    o.drain = true;  // `up` owns its pods: they end with it (or, if it is killed, by the fencer)
    o.fencer_exe = self_exe();
    o.drain_grace_ms = 3000;
    o.isolation = isolation;
    if (a.serve.opt.quiet) o.log = [](const std::string&) {};
    auto ag = agent::Agent::create(o);
    if (!ag) {
      std::cerr << "error: agent " << o.node << ": " << ag.error() << "\n";
      (*srv)->stop();
      return 1;
    }
    (*ag)->start();
    agents.push_back(std::move(*ag));
  }
  std::printf("sluice is up: %s/ (web dashboard), API %s, %d node(s) with %s, data in %s\n",
              url.c_str(), url.c_str(), a.nodes, a.gpus.c_str(), a.serve.opt.data_dir.c_str());
  std::printf("try: SLUICE_SERVER=%s sluice jobs | sluice queues | sluice nodes\n", url.c_str());
  if (const std::string note = up_pod_user_note(isolation); !note.empty())
    std::printf("%s\n", note.c_str());
  if (!a.demo && a.serve.opt.config_files.size() == 1 &&
      a.serve.opt.config_files[0] == a.serve.opt.data_dir + "/up-config.yaml")
    std::printf(
        "queue: LocalQueue \"default\" of namespace \"default\" (what `sluice run` uses without "
        "-q): SLUICE_SERVER=%s sluice run --cpu 1 -- ./my-script.sh\n",
        url.c_str());
  else
    std::printf("queues: `SLUICE_SERVER=%s sluice queues` lists them; `sluice run -q QUEUE ...`\n",
                url.c_str());
  std::fflush(stdout);
  // 3. The demo mix, submitted over HTTP like any client would.
  httplib::Client cli(url);
  cli.set_read_timeout(30, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int rc = 0;
  std::string last;
  if (a.demo) {
    std::printf(
        "demo: a preemptible sweep borrows the idle GPUs; team-a's urgent gang reclaims "
        "its quota; team-b reclaims; an interactive notebook must start within 30 s\n");
    for (const auto& [at, docs] : demo_schedule()) {
      while (elapsed() < at) {
        if (wait_for_signal(set, std::min(1.0, at - elapsed()), **srv) != 0) goto done;
        print_status(cli, elapsed(), last);
      }
      for (const auto& d : docs) {
        auto r = cli.Post("/v1/jobs", d, "application/yaml");
        if (!r || r->status != 202) {
          std::printf("demo: submission failed: %s\n", r ? r->body.c_str() : "no answer");
          rc = 1;
        }
      }
      std::printf("[%5.1fs] submitted %zu job(s)\n", elapsed(), docs.size());
    }
  }
  // 4. Run until a signal (or --exit-after), printing progress as it changes.
  for (;;) {
    const double left = a.exit_after_s > 0 ? a.exit_after_s - elapsed() : 5.0;
    if (a.exit_after_s > 0 && left <= 0) break;
    if (wait_for_signal(set, std::min(1.0, left), **srv) != 0) break;
    print_status(cli, elapsed(), last);
  }
done:
  print_jobs_table(cli);
  for (auto& ag : agents) ag->stop();
  (*srv)->stop();
  return rc;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto sa = std::make_shared<ServeArgs>();
  auto* serve = app.add_subcommand("serve",
                                   "Run the control-plane server (HTTP API, scheduling "
                                   "loop, SQLite store)");
  serve
      ->add_option("--config", sa->opt.config_files,
                   "Cluster, queues, policy and ServerAuth documents (default: the stored ones)")
      ->check(CLI::ExistingFile);
  add_server_options(serve, *sa);
  serve->callback([sa] {
    if (int rc = run_serve(*sa)) throw CLI::RuntimeError(rc);
  });

  auto ua = std::make_shared<UpArgs>();
  ua->serve.opt.data_dir.clear();  // the per-user state directory (state_home.h)
  auto* up = app.add_subcommand("up",
                                "Start a server and local agents with fake GPUs in one "
                                "process; --demo submits a demo mix");
  up->add_flag("--demo", ua->demo,
               "Three teams, borrowing, a gang and a preemption, within a "
               "minute (2 nodes x 4 fake H100)");
  up->add_option("--config", ua->serve.opt.config_files, "Use this configuration instead")
      ->check(CLI::ExistingFile);
  up->add_option("--nodes", ua->nodes, "Local nodes (one agent each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  up->add_option("--gpus", ua->gpus, "GPUs per local node: fake:COUNTxMODEL or auto (NVML)")
      ->capture_default_str();
  up->add_option("--exit-after", ua->exit_after_s, "Stop after this many seconds (0: on Ctrl-C)")
      ->capture_default_str();
  up->add_option("--pod-uid", ua->pod_uids,
                 "(root) pods of namespace NS run as UID[:GID], e.g. default=1000; repeatable");
  up->add_flag("--pods-as-agent", ua->pods_as_agent,
               "(root) run pods as root with this process's environment (no isolation)");
  add_server_options(up, ua->serve);
  up->get_option("--data-dir")
      ->description(
          "SQLite store, event log and agents' directories (default: $XDG_STATE_HOME/sluice/up, "
          "else ~/.local/state/sluice/up)")
      ->default_str("");
  up->callback([ua] {
    if (int rc = run_up(*ua)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
