// `sluice serve`: the control plane (docs/ha.md for replicas on etcd).
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

#include "cli/client_term.h"
#include "cli/commands.h"
#include "cli/serve_server.h"
#include "server/election.h"

namespace sluice::cli {
namespace {

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
}

}  // namespace sluice::cli
