// Starting the control plane and waiting on it: what `sluice serve` and `sluice up` share.
#include "cli/serve_server.h"

#include <iostream>
#include <memory>
#include <vector>

#include "cli/client_term.h"
#include "server/otlp_export.h"

namespace sluice::cli {

void block_signals(sigset_t* set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, set, nullptr);
}

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

namespace {

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

}  // namespace

Result<std::unique_ptr<server::Server>> start_server(ServeArgs& a,
                                                     std::unique_ptr<server::Store> store) {
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

}  // namespace sluice::cli
