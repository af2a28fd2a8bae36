// `sluice up`: a server and local agents in one process, optionally with the demo. The
// configuration it writes is up_yaml.cc's, the demo up_demo.cc's, what it prints up_status.cc's.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/pod_identity.h"
#include "cli/commands.h"
#include "cli/demo_assets.h"
#include "cli/serve_server.h"
#include "cli/state_home.h"
#include "cli/up_demo.h"
#include "cli/up_status.h"
#include "cli/up_yaml.h"

namespace sluice::cli {
namespace {

struct UpArgs {
  ServeArgs serve;
  bool demo = false;
  int nodes = 1;
  std::string gpus = "fake:8xH100";
  double exit_after_s = 0;
  bool demo_pool = false;  // the demo's own configuration, with its node pool (up_demo.h)
  std::vector<std::string> pod_uids;  // --pod-uid NS=UID[:GID], as `sluice agent`'s
  bool pods_as_agent = false;
  std::vector<std::string> node_labels;  // --node-label KEY=VALUE, on every local node
  std::string container_runtime;         // --container-runtime, as `sluice agent`'s
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

// --data-dir, else the per-user state directory (said once), created. False after reporting.
bool prepare_data_dir(UpArgs& a) {
  if (a.serve.opt.data_dir.empty()) {
    a.serve.opt.data_dir = up_state_dir();
    if (a.serve.opt.data_dir.empty()) {
      std::cerr << "error: no --data-dir, and neither XDG_STATE_HOME nor HOME names a directory\n";
      return false;
    }
    std::printf("sluice up: state in %s (--data-dir chooses another)\n",
                a.serve.opt.data_dir.c_str());
    std::fflush(stdout);
  }
  std::error_code ec;
  std::filesystem::create_directories(a.serve.opt.data_dir, ec);
  if (ec) {
    std::cerr << "error: cannot create " << a.serve.opt.data_dir << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

bool write_up_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) std::cerr << "error: cannot write " << path << "\n";
  return static_cast<bool>(f);
}

// 1. Configuration: the demo's, or one queue over the local nodes, unless --config is given;
// a --config without a Cluster (Kueue's files, where Kubernetes has the nodes) gets the local
// nodes as its cluster. 0, or the exit status after reporting.
int write_up_config(UpArgs& a) {
  const bool own = a.serve.opt.config_files.empty();
  if (own && a.demo) {
    a.nodes = 2;
    a.gpus = "fake:4xH100";
  }
  const auto gpus = local_gpus(a.gpus);
  if (!gpus) {
    std::cerr << "error: " << gpus.error() << "\n";
    return 2;
  }
  const auto labels = parse_node_labels(a.node_labels);
  if (!labels) {
    std::cerr << "error: " << labels.error() << "\n";
    return 2;
  }
  if (!labels->empty() && own && a.demo) {
    std::cerr << "error: --node-label: the demo's cluster has its own nodes (give --config)\n";
    return 2;
  }
  if (own) {
    const std::string path = a.serve.opt.data_dir + "/up-config.yaml";
    std::string text = local_cluster_yaml(a.nodes, *gpus, *labels);
    if (a.demo) {
      const auto pool = demo_pool_config(a.serve.opt.data_dir);
      if (!pool) {
        std::cerr << "error: " << pool.error() << "\n";
        return 1;
      }
      text = std::string(kDemoCluster) + "---\n" + kDemoQueues + "---\n" + *pool;
      a.demo_pool = true;
    }
    if (!write_up_file(path, text)) return 1;
    a.serve.opt.config_files = {path};
  } else if (!has_cluster_doc(a.serve.opt.config_files)) {
    const std::string path = a.serve.opt.data_dir + "/up-cluster.yaml";
    if (!write_up_file(path, local_cluster_doc(a.nodes, *gpus, *labels))) return 1;
    a.serve.opt.config_files.push_back(path);
    std::printf("no Cluster in --config: the %d local node(s) are the cluster (%s)\n", a.nodes,
                path.c_str());
  }
  return 0;
}

// --pod-uid and --pods-as-agent.
Result<agent::IsolationOptions> up_isolation(const UpArgs& a) {
  agent::IsolationOptions isolation;
  for (const auto& spec : a.pod_uids) {
    auto entry = agent::parse_pod_uid(spec);
    if (!entry) return Error{"--pod-uid: " + entry.error()};
    isolation.identity.namespaces[entry->first] = entry->second;
  }
  if (a.pods_as_agent) isolation.drop_privileges = 0;
  isolation.container_runtime = a.container_runtime;
  isolation.step_exe = self_exe();
  return isolation;
}

using Agents = std::vector<std::unique_ptr<agent::Agent>>;

// 2. Local agents, one per node, in this process.
Result<Agents> start_agents(const UpArgs& a, const std::string& url,
                            const agent::IsolationOptions& isolation) {
  Agents agents;
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
    if (!ag) return Error{"agent " + o.node + ": " + ag.error()};
    (*ag)->start();
    agents.push_back(std::move(*ag));
  }
  return agents;
}

void print_banner(const UpArgs& a, const std::string& url,
                  const agent::IsolationOptions& isolation) {
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
}

// 4. Until a signal (or --exit-after), printing progress as it changes.
void run_until_stopped(const UpArgs& a, UpStatus& status, const sigset_t& set,
                       server::Server& srv) {
  for (;;) {
    const double left = a.exit_after_s > 0 ? a.exit_after_s - status.elapsed() : 5.0;
    if (a.exit_after_s > 0 && left <= 0) break;
    if (wait_for_signal(set, std::min(1.0, left), srv) != 0) break;
    status.print_if_changed();
  }
}

int run_up(UpArgs& a) {
  if (!a.serve.opt.store.empty()) {
    std::cerr << "error: sluice up keeps its store in --data-dir (SQLite); replicated servers "
                 "on etcd are started with `sluice serve --store etcd://...` (docs/ha.md)\n";
    return 2;
  }
  sigset_t set;
  block_signals(&set);
  if (!prepare_data_dir(a)) return 1;
  if (int rc = write_up_config(a)) return rc;
  auto srv = start_server(a.serve);
  if (!srv) {
    std::cerr << "error: " << srv.error() << "\n";
    return 1;
  }
  const std::string url = (*srv)->url();
  auto isolation = up_isolation(a);
  Result<Agents> agents =
      isolation ? start_agents(a, url, *isolation) : Result<Agents>(Error{isolation.error()});
  if (!agents) {
    std::cerr << "error: " << agents.error() << "\n";
    (*srv)->stop();
    return 1;
  }
  print_banner(a, url, *isolation);
  // 3. The demo mix, submitted over HTTP like any client would; then progress until stopped.
  UpStatus status(url);
  int rc = 0;
  if (!a.demo || run_demo(status, set, **srv, &rc)) run_until_stopped(a, status, set, **srv);
  status.print_jobs_table();
  for (auto& ag : *agents) ag->stop();
  (*srv)->stop();
  if (a.demo_pool) stop_demo_pool(a.serve.opt.data_dir);
  return rc;
}

}  // namespace

void register_up(CLI::App& app) {
  auto ua = std::make_shared<UpArgs>();
  ua->serve.opt.data_dir.clear();  // the per-user state directory (state_home.h)
  auto* up = app.add_subcommand("up",
                                "Start a server and local agents with fake GPUs in one "
                                "process; --demo submits a demo mix");
  up->add_flag("--demo", ua->demo,
               "Three teams, borrowing, a gang and a preemption, within a "
               "minute (2 nodes x 4 fake H100), and a node pool that scales up and down");
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
  up->add_option("--container-runtime", ua->container_runtime,
                 "Run pods that name an image in containers with this command (podman), as "
                 "`sluice agent --container-runtime`; default: none");
  up->add_option("--node-label", ua->node_labels,
                 "A label KEY=VALUE on every local node (a flavor's nodeLabels select it); "
                 "repeatable");
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
