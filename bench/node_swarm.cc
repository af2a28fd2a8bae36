// node_swarm: many fake nodes against one `sluice serve`, speaking the agents' protocol
// (src/proto/protocol.h) from a few threads, for the control plane's scale benchmark
// (bench/ha/scale_bench.sh, issue 16).
//
// A real `sluice agent` costs about six threads per node (sync loop, reporter, supervisor, its
// HTTP server); 10,000 of them on one machine pass the kernel's pid_max (32,768 threads). The
// swarm keeps what the server sees: every node registers with its own credential and GPUs,
// then syncs once per heartbeat (the server's, or --heartbeat-ms) with what it runs; an
// assignment "runs" for --run-ms and its exit is reported at the node's next sync, with the
// start. Syncs do not long-poll (wait_ms 0): an order reaches its node at the node's next
// heartbeat, as with a real agent whose long poll was cut short.
//
//   node_swarm --server URL --prefix n --first 1 --count 10000 --width 5 --gpus 8
//              [--model H100] [--threads 4] [--run-ms 0] [--heartbeat-ms 0] [--seconds 0]
//              [--progress-file PATH]
//
// Prints one JSON line on stdout when it stops (SIGINT/SIGTERM, or after --seconds):
// registration time, syncs, errors, pods run, sync latency p50/p99. While it runs, one status
// line per 5 s on stderr, and with --progress-file the syncs answered so far in PATH (one
// number, rewritten every 100 ms): the benchmark divides the server's CPU by the syncs it
// really served, also when a loaded machine holds the swarm below one sync per heartbeat.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proto/protocol.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  std::string server = "http://127.0.0.1:7070";
  std::string prefix = "n";
  long first = 1, count = 100, width = 0;
  int gpus = 8, threads = 4;
  std::string model = "H100";
  long run_ms = 0, heartbeat_ms = 0, seconds = 0;
  std::string progress_file;
};

[[noreturn]] void usage(const std::string& msg) {
  std::cerr << "node_swarm: " << msg
            << "\nusage: node_swarm --server URL [--prefix n] [--first 1] [--count 100] "
               "[--width 0] [--gpus 8] [--model H100] [--threads 4] [--run-ms 0] "
               "[--heartbeat-ms 0] [--seconds 0] [--progress-file PATH]\n";
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage("missing value for " + k);
    const std::string v = argv[++i];
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    const bool num = !v.empty() && *end == '\0' && n >= 0;
    auto need = [&] {
      if (!num) usage(k + ": expected a whole number");
      return n;
    };
    if (k == "--server")
      a.server = v;
    else if (k == "--prefix")
      a.prefix = v;
    else if (k == "--model")
      a.model = v;
    else if (k == "--progress-file")
      a.progress_file = v;
    else if (k == "--first")
      a.first = need();
    else if (k == "--count")
      a.count = need();
    else if (k == "--width")
      a.width = need();
    else if (k == "--gpus")
      a.gpus = static_cast<int>(need());
    else if (k == "--threads")
      a.threads = static_cast<int>(std::max(1L, need()));
    else if (k == "--run-ms")
      a.run_ms = need();
    else if (k == "--heartbeat-ms")
      a.heartbeat_ms = need();
    else if (k == "--seconds")
      a.seconds = need();
    else
      usage("unknown argument " + k);
  }
  return a;
}

std::atomic<bool> g_stop{false};

struct Node {
  std::string name, credential, agent_id;
  bool registered = false;
  Clock::time_point next_sync;
  std::map<sluice::proto::PodRef, Clock::time_point> running;  // -> when it "exits"
  std::vector<sluice::proto::StartedPod> started;
  std::vector<sluice::proto::PodExit> exits;
};

struct Totals {
  std::atomic<long> registered{0}, syncs{0}, errors{0}, pods{0}, exits{0};
  std::mutex mu;
  std::vector<double> sync_ms;  // a sample (every 16th sync)
  std::string first_error;
  void error(const std::string& what) {
    if (errors++ == 0) {
      std::lock_guard lk(mu);
      first_error = what;
    }
  }
};

std::string random_token(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string s(48, '0');
  for (auto& c : s) c = hex[rng() % 16];
  return s;
}

httplib::Headers bearer(const std::string& t) {
  return {{"Authorization", "Bearer " + t}};
}

bool do_register(httplib::Client& cli, Node& n, const Args& a, Totals& t) {
  sluice::proto::RegisterRequest req;
  req.node = n.name;
  req.address = "http://127.0.0.1:1";  // informational: the server never dials it
  for (int g = 0; g < a.gpus; ++g)
    req.gpus.push_back(
        {g, a.model, 81920, g / 4, {}, false, "fake-" + n.name + "-" + std::to_string(g)});
  req.cpu_milli = 64'000;
  req.memory_mib = 512 * 1024;
  req.agent_id = n.agent_id;
  req.credential = n.credential;
  for (const auto& [ref, end] : n.running) req.running.push_back({ref.job, ref.pod, 1, false});
  auto res =
      cli.Post("/v1/agents/register", bearer(n.credential), json(req).dump(), "application/json");
  if (!res || res->status != 200) {
    t.error("register " + n.name + ": " +
            (res ? std::to_string(res->status) + " " + res->body.substr(0, 300)
                 : httplib::to_string(res.error())));
    return false;
  }
  n.registered = true;
  return true;
}

// One sync: what ended since the last one, what started; the orders of the reply.
bool do_sync(httplib::Client& cli, Node& n, const Args& a, Totals& t, long* heartbeat_ms) {
  const auto now = Clock::now();
  for (auto it = n.running.begin(); it != n.running.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    n.exits.push_back({it->first.job, it->first.pod, 0, 0, "exited", "", 0});
    it = n.running.erase(it);
  }
  sluice::proto::SyncRequest req;
  req.agent_id = n.agent_id;
  for (const auto& [ref, end] : n.running) req.running.push_back({ref.job, ref.pod, 1, false});
  req.exits = n.exits;
  req.started = n.started;
  auto res = cli.Post("/v1/agents/" + n.name + "/sync", bearer(n.credential), json(req).dump(),
                      "application/json");
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - now).count();
  if (!res || res->status != 200) {
    t.error("sync " + n.name + ": " +
            (res ? std::to_string(res->status) + " " + res->body.substr(0, 300)
                 : httplib::to_string(res.error())));
    if (res && res->status == 404) n.registered = false;  // the server forgot us: register
    return false;
  }
  t.exits += static_cast<long>(n.exits.size());
  n.exits.clear();
  n.started.clear();
  auto resp = json::parse(res->body).get<sluice::proto::SyncResponse>();
  if (a.heartbeat_ms == 0 && resp.heartbeat_ms > 0) *heartbeat_ms = resp.heartbeat_ms;
  const auto done = Clock::now() + std::chrono::milliseconds(a.run_ms);
  for (const auto& as : resp.assign) {
    n.running[{as.job, as.pod}] = done;
    n.started.push_back({as.job, as.pod, as.run});
    ++t.pods;
  }
  for (const auto& s : resp.stop) {
    if (!n.running.erase({s.job, s.pod})) continue;
    n.exits.push_back({s.job, s.pod, 0, 15, "signaled", s.reason, 0});
  }
  if ((t.syncs++ & 15) == 0) {
    std::lock_guard lk(t.mu);
    t.sync_ms.push_back(ms);
  }
  return true;
}

// One thread's share of the nodes: register them all, then sync each once per heartbeat.
void run_share(std::vector<Node*> nodes, const Args& a, Totals& t) {
  httplib::Client cli(a.server);
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);  // as the agent: no Nagle wait between header and body
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(30, 0);
  long heartbeat_ms = a.heartbeat_ms > 0 ? a.heartbeat_ms : 1000;
  for (Node* n : nodes) {
    while (!g_stop && !do_register(cli, *n, a, t))
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ++t.registered;
  }
  // Spread the syncs over one heartbeat.
  const auto start = Clock::now();
  for (size_t i = 0; i < nodes.size(); ++i)
    nodes[i]->next_sync =
        start + std::chrono::milliseconds(heartbeat_ms * static_cast<long>(i) /
                                          static_cast<long>(std::max<size_t>(1, nodes.size())));
  size_t at = 0;
  while (!g_stop && !nodes.empty()) {
    Node& n = *nodes[at];
    at = (at + 1) % nodes.size();
    const auto now = Clock::now();
    if (n.next_sync > now) std::this_thread::sleep_until(n.next_sync);
    const bool ok = n.registered ? do_sync(cli, n, a, t, &heartbeat_ms) : do_register(cli, n, a, t);
    n.next_sync += std::chrono::milliseconds(heartbeat_ms);
    if (!ok || n.next_sync < Clock::now() - std::chrono::milliseconds(heartbeat_ms))
      n.next_sync = Clock::now() + std::chrono::milliseconds(heartbeat_ms);  // behind: no burst
  }
}

// Replaced whole (a rename), so that a reader never sees half a number.
void write_progress(const std::string& path, long syncs) {
  const std::string tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%ld\n", syncs);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::mt19937_64 rng(std::random_device{}());
  std::vector<Node> nodes(static_cast<size_t>(a.count));
  for (long i = 0; i < a.count; ++i) {
    char num[32];
    std::snprintf(num, sizeof num, "%0*ld", static_cast<int>(a.width), a.first + i);
    nodes[static_cast<size_t>(i)].name = a.prefix + num;
    nodes[static_cast<size_t>(i)].credential = random_token(rng);
    nodes[static_cast<size_t>(i)].agent_id = random_token(rng).substr(0, 16);
  }
  Totals t;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int k = 0; k < a.threads; ++k) {
    std::vector<Node*> share;
    for (size_t i = static_cast<size_t>(k); i < nodes.size(); i += static_cast<size_t>(a.threads))
      share.push_back(&nodes[i]);
    threads.emplace_back(run_share, std::move(share), std::cref(a), std::ref(t));
  }
  double registered_s = -1;
  long last_syncs = 0;
  auto last = Clock::now();
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto now = Clock::now();
    if (registered_s < 0 && t.registered == a.count) {
      registered_s = std::chrono::duration<double>(now - t0).count();
      std::cerr << "node_swarm: " << a.count << " nodes registered in " << registered_s << " s\n";
    }
    if (now - last >= std::chrono::seconds(5)) {
      const long s = t.syncs;
      std::cerr << "node_swarm: " << t.registered << " registered, "
                << (s - last_syncs) / std::chrono::duration<double>(now - last).count()
                << " syncs/s, " << t.pods << " pods, " << t.errors << " errors\n";
      last_syncs = s;
      last = now;
    }
    if (!a.progress_file.empty()) write_progress(a.progress_file, t.syncs);
    if (a.seconds > 0 && now - t0 >= std::chrono::seconds(a.seconds)) g_stop = true;
  }
  for (auto& th : threads) th.join();
  std::sort(t.sync_ms.begin(), t.sync_ms.end());
  auto pct = [&](double p) {
    return t.sync_ms.empty() ? 0.0
                             : t.sync_ms[std::min(t.sync_ms.size() - 1,
                                                  static_cast<size_t>(p * t.sync_ms.size()))];
  };
  json out{{"nodes", a.count},
           {"registered", t.registered.load()},
           {"registered_s", registered_s},
           {"syncs", t.syncs.load()},
           {"errors", t.errors.load()},
           {"first_error", t.first_error},
           {"pods", t.pods.load()},
           {"exits_reported", t.exits.load()},
           {"sync_ms_p50", pct(0.5)},
           {"sync_ms_p99", pct(0.99)}};
  std::cout << out.dump() << std::endl;
  return 0;
}
