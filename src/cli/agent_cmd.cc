// `sluice agent`: the node agent (docs/agent.md). One agent per machine in production; with
// --names one per name in this process (benchmarks with many fake nodes on one machine).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <tuple>

#include "agent/agent.h"
#include "agent/node_names.h"
#include "cli/commands.h"

namespace sluice::cli {
namespace {

struct AgentArgs {
  std::string server;
  std::string name;
  std::string names;
  std::string gpus = "auto";
  std::string state_dir;
  std::string listen = "127.0.0.1:0";
  std::string advertise;
  std::string join_token;
  std::string join_token_file;
  std::string join_token_flag;  // refused: a token on the command line is visible to everyone
  bool fencer = true;
  int64_t heartbeat_ms = 1000;
  int64_t drain_grace_ms = 10'000;
  int64_t report_delay_ms = 50;
  int64_t keep_finished = 1000;
  int64_t pod_log_max_mib = 256;
  int64_t pod_max_procs = 16384;
  bool drain = false;
  bool discover = false;
  agent::NvmlOptions nvml;
  // Isolation of pods (docs/agent.md, "What a pod can see and do").
  std::vector<std::string> pod_uids;  // NS=UID[:GID]
  std::string pod_uid_range = "60000-65535";
  bool pods_as_agent = false;
  agent::IsolationOptions isolation;
};

// --pod-uid, --pod-uid-range and --pods-as-agent into the isolation options.
Result<agent::IsolationOptions> isolation_options(const AgentArgs& args) {
  agent::IsolationOptions o = args.isolation;
  o.step_exe = self_exe();
  for (const auto& spec : args.pod_uids) {
    auto entry = agent::parse_pod_uid(spec);
    if (!entry) return Error{entry.error()};
    o.identity.namespaces[entry->first] = entry->second;
  }
  auto range = agent::parse_uid_range(args.pod_uid_range);
  if (!range) return Error{range.error()};
  std::tie(o.identity.range_first, o.identity.range_last) = *range;
  if (args.pods_as_agent) o.drop_privileges = 0;
  return o;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// Reads a secret from the environment and wipes it there: /proc/PID/environ shows the
// process's original environment block, which unsetenv alone leaves intact.
std::string take_env_secret(const char* name) {
  char* v = std::getenv(name);
  if (!v) return {};
  std::string value(v);
  std::memset(v, 0, value.size());
  ::unsetenv(name);
  return value;
}

// A token file: its first line, trimmed. Refused when other users may read it.
Result<std::string> read_token_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Error{"--join-token-file " + path + ": " + std::strerror(errno)};
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%o", st.st_mode & 0777);
    return Error{"--join-token-file " + path + ": other users may read it (mode " + mode +
                 "); chmod 600 it"};
  }
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.empty()) return Error{"--join-token-file " + path + ": empty"};
  return line;
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

int discover(const AgentArgs& args) {
  const std::string node = args.name.empty() ? hostname() : args.name;
  auto provider = agent::make_gpu_provider(args.gpus, node, args.nvml);
  if (!provider) {
    std::cerr << "sluice agent: " << provider.error() << "\n";
    return 1;
  }
  nlohmann::json out = {
      {"node", node}, {"source", (*provider)->kind()}, {"gpus", (*provider)->gpus()}};
  if (auto util = (*provider)->utilization_pct(); !util.empty()) out["utilization_pct"] = util;
  std::cout << out.dump(2) << "\n";
  return 0;
}

// The join token from --join-token-file (a token on the command line is refused). False with
// the error printed.
bool take_join_token(AgentArgs& args) {
  if (!args.join_token_flag.empty()) {
    std::cerr << "sluice agent: --join-token: a token on the command line is visible to every "
                 "user of the machine (ps, /proc/PID/cmdline); use --join-token-file FILE "
                 "(mode 600) or $SLUICE_JOIN_TOKEN\n";
    return false;
  }
  if (!args.join_token_file.empty()) {
    auto t = read_token_file(args.join_token_file);
    if (!t) {
      std::cerr << "sluice agent: " << t.error() << "\n";
      return false;
    }
    args.join_token = *t;
  }
  return true;
}

// Which agents: --names expands to several, else one named --name or the host name.
Result<std::vector<std::string>> agent_nodes(const AgentArgs& args) {
  if (!args.names.empty()) return agent::expand_node_names(args.names);
  return std::vector<std::string>{args.name.empty() ? hostname() : args.name};
}

// The options of agent `i` of `nodes` (several in one process: a state directory and, for a
// fixed port P, the port P+i each).
agent::AgentOptions agent_options(const AgentArgs& args, const std::vector<std::string>& nodes,
                                  size_t i, const agent::IsolationOptions& isolation,
                                  const std::pair<std::string, int>& listen) {
  const bool multi = !args.names.empty();
  agent::AgentOptions o;
  o.server_url = args.server;
  o.node = nodes[i];
  o.gpus_spec = args.gpus;
  o.nvml = args.nvml;
  o.state_dir = args.state_dir.empty()
                    ? (multi ? "./sluice-agents/" + nodes[i] : "./sluice-agent-" + nodes[i])
                    : (multi ? args.state_dir + "/" + nodes[i] : args.state_dir);
  o.listen = listen.second == 0
                 ? args.listen
                 : listen.first + ":" + std::to_string(listen.second + static_cast<int>(i));
  o.advertise = multi ? "" : args.advertise;
  o.join_token = args.join_token;
  if (args.fencer) o.fencer_exe = self_exe();
  o.heartbeat_ms = args.heartbeat_ms;
  o.drain = args.drain;
  o.drain_grace_ms = args.drain_grace_ms;
  o.report_during_poll = args.report_delay_ms >= 0;
  o.report_delay_ms = args.report_delay_ms;
  o.keep_finished = args.keep_finished;
  o.pod_log_max_bytes = args.pod_log_max_mib << 20;
  o.pod_max_procs = args.pod_max_procs;
  o.isolation = isolation;
  return o;
}

int run_agents(AgentArgs args) {
  // 1. The token, the agents, their isolation and ports.
  if (!take_join_token(args)) return 2;
  auto bad = [](const std::string& error) {
    std::cerr << "sluice agent: " << error << "\n";
    return 2;
  };
  auto nodes = agent_nodes(args);
  if (!nodes) return bad(nodes.error());
  auto isolation = isolation_options(args);
  if (!isolation) return bad(isolation.error());
  auto listen = agent::parse_listen(args.listen);
  if (!listen) return bad(listen.error());
  // 2. SIGINT/SIGTERM are taken with sigwait: block them before any thread exists so every
  //    thread inherits the mask (pods get a clean mask back before exec).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::unique_ptr<agent::Agent>> agents;
  for (size_t i = 0; i < nodes->size(); ++i) {
    auto a = agent::Agent::create(agent_options(args, *nodes, i, *isolation, *listen));
    if (!a) {
      std::cerr << "sluice agent: " << a.error() << "\n";
      return 1;
    }
    agents.push_back(std::move(*a));
  }
  for (auto& a : agents) a->start();
  // 3. Run until a stop signal.
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cerr << "sluice agent: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ": stopping"
            << (args.drain ? " and draining pods" : " (pods keep running)") << "\n";
  for (auto& a : agents) a->stop();
  return 0;
}

}  // namespace

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

namespace {

// Who the agent is and how it reaches the server.
void add_agent_identity_options(CLI::App* cmd, const std::shared_ptr<AgentArgs>& args) {
  cmd->add_option("--server", args->server, "Control-plane URL ($SLUICE_SERVER)")
      ->capture_default_str();
  cmd->add_option("--name", args->name, "Node name as in the Cluster config (default: host name)");
  cmd->add_option("--names", args->names,
                  "Run one agent per name in this process, e.g. n[1-64] (benchmarks; state in "
                  "STATE_DIR/<name>)");
  cmd->add_option("--gpus", args->gpus,
                  "auto (NVML), none, or fake:SPEC e.g. fake:8xH100:80Gi,2xL4")
      ->capture_default_str();
  cmd->add_option("--state-dir", args->state_dir,
                  "Logs, work dirs, pods.json (default ./sluice-agent-<node>)");
  cmd->add_option("--listen", args->listen, "The agent's own HTTP endpoints (HOST:PORT, 0 = any)")
      ->capture_default_str();
  cmd->add_option(
      "--advertise", args->advertise,
      "Address the server and jobs use to reach the endpoints (default http://<listen>)");
  cmd->add_option("--join-token-file", args->join_token_file,
                  "File (mode 600) holding the join token that registers a new node; or "
                  "$SLUICE_JOIN_TOKEN. Later the node uses its own credential (STATE_DIR/"
                  "node-credential)");
  cmd->add_option("--join-token", args->join_token_flag)
      ->group("");  // refused with a message: tokens never go on the command line
  cmd->add_flag("!--no-fencer", args->fencer,
                "Do not start the fencer that stops this node's pods when the agent dies and "
                "its lease runs out (docs/agent.md, Fencing)");
  cmd->add_option("--heartbeat-ms", args->heartbeat_ms, "Sync period until the server sets one")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{50}, int64_t{60'000}));
}

// What it does with its pods: draining, reports, logs, limits.
void add_agent_pod_options(CLI::App* cmd, const std::shared_ptr<AgentArgs>& args) {
  cmd->add_flag("--drain", args->drain,
                "On SIGINT/SIGTERM stop the pods too (default: leave them running)");
  cmd->add_option("--drain-grace-ms", args->drain_grace_ms,
                  "SIGTERM-to-SIGKILL grace when draining")
      ->capture_default_str();
  cmd->add_option("--report-delay-ms", args->report_delay_ms,
                  "Starts/exits during a long poll go out after gathering this long (-1: only "
                  "when the long poll returns)")
      ->capture_default_str();
  cmd->add_option("--keep-finished", args->keep_finished,
                  "Finished pods whose log and working directory stay on disk (`sluice logs`); "
                  "beyond this many the oldest are removed (0: keep all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000'000}));
  cmd->add_option("--pod-log-max-mib", args->pod_log_max_mib,
                  "A pod's log past this many MiB is cut back to its first half and a line "
                  "saying so; its exit says how much was dropped (0: no cap)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--pod-max-procs", args->pod_max_procs,
                  "(root agent) the most processes and threads a namespace's pods may have on "
                  "this machine (RLIMIT_NPROC of its uid; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{4'194'304}));
  cmd->add_option("--nvml-library", args->nvml.library,
                  "NVML library for --gpus auto, loaded at run time")
      ->capture_default_str();
  cmd->add_flag("--discover", args->discover, "Print the GPUs found as JSON and exit");
}

// How pods are kept apart: uids, sandbox, containers, cgroups.
void add_agent_isolation_options(CLI::App* cmd, const std::shared_ptr<AgentArgs>& args) {
  cmd->add_option("--pod-uid", args->pod_uids,
                  "A root agent runs the pods of namespace NS as UID (and GID, default UID): "
                  "NS=UID[:GID], repeatable")
      ->take_all();
  cmd->add_option("--pod-uid-range", args->pod_uid_range,
                  "uids for namespaces without --pod-uid (one per namespace, from a hash of its "
                  "name): FIRST-LAST, or none")
      ->capture_default_str();
  cmd->add_flag("--pods-as-agent", args->pods_as_agent,
                "A root agent runs pods as root, with its environment (no isolation; tests)");
  cmd->add_option("--sandbox", args->isolation.sandbox,
                  "none, or bwrap: each pod in a bubblewrap sandbox (read-only host, private "
                  "/tmp and PID namespace, only its GPUs)")
      ->capture_default_str();
  cmd->add_flag_callback(
      "--host-proc", [args] { args->isolation.private_proc = false; },
      "(root agent) let pods outside the sandbox see the host's /proc (by default "
      "each gets its own, hiding other namespaces' processes)");
  cmd->add_option("--bwrap", args->isolation.bwrap, "The bubblewrap executable")
      ->capture_default_str();
  cmd->add_option("--container-runtime", args->isolation.container_runtime,
                  "Run pods that name an image in containers with this command, e.g. podman, "
                  "or \"podman --runtime runc\" (docs/agent.md, Images); default: none");
  cmd->add_option("--cgroups", args->isolation.cgroups.mode,
                  "cgroup v2 CPU and memory limits for pods: auto (when the machine allows it), "
                  "on (required), off")
      ->capture_default_str();
  cmd->add_option("--cgroup-root", args->isolation.cgroups.root,
                  "Parent cgroup of the pods' groups (default: <cgroup2 mount>/sluice)");
}

}  // namespace

void register_agent(CLI::App& app) {
  auto* cmd = app.add_subcommand("agent", "Run the node agent: GPUs, pod processes, heartbeats");
  auto args = std::make_shared<AgentArgs>();
  args->server = env_or("SLUICE_SERVER", "http://127.0.0.1:7070");
  args->join_token = take_env_secret("SLUICE_JOIN_TOKEN");
  add_agent_identity_options(cmd, args);
  add_agent_pod_options(cmd, args);
  add_agent_isolation_options(cmd, args);
  cmd->callback([args] {
    const int rc = args->discover ? discover(*args) : run_agents(*args);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });

  // The fencer (src/agent/fence.h): started by the agent, not by people.
  auto* fencer = app.add_subcommand("agent-fencer", "")->group("");
  auto dir = std::make_shared<std::string>();
  fencer->add_option("--state-dir", *dir, "The agent's state directory")->required();
  fencer->callback([dir] {
    const int rc = agent::run_fencer({.state_dir = *dir});
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace sluice::cli
