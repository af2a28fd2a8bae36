#include "gateway/cli.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "gateway/config.h"
#include "gateway/gateway.h"
#include "gateway/loadgen.h"
#include "gateway/test_backend.h"

namespace sluice::gateway {
namespace {

void fail_with(int code) {
  if (code != 0) throw CLI::RuntimeError(code);
}

// `--trace code|conv`: the Azure trace under $SLUICE_TRACES, else ../shared/traces from the
// repository root (the binary usually lives in <root>/build), else from the working directory.
std::string azure_trace(const std::string& name) {
  std::string root = ".";
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) root = exe.parent_path().parent_path().string();
  const std::string file = "/inference/AzureLLMInferenceTrace_" + name + ".csv";
  std::string path = traces_dir(root) + file;
  if (!std::filesystem::exists(path) && !std::getenv("SLUICE_TRACES"))
    path = traces_dir(".") + file;
  return path;
}

// `gateway test-backend`: a model backend stand-in for tests and benchmarks.
CLI::App* register_test_backend(CLI::App* gw) {
  auto* tb = gw->add_subcommand("test-backend", "Model backend stand-in for tests and benchmarks");
  auto to = std::make_shared<TestBackendOptions>();
  tb->add_option("--listen", to->listen, "host:port (port 0: any free)")->capture_default_str();
  tb->add_option("--port-file", to->port_file, "write the bound port to this file");
  tb->add_option("--name", to->name, "name reported in x-backend")->capture_default_str();
  tb->add_option("--service-ms", to->service_ms, "service time per request (x-service-us wins)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  tb->add_option("--service-scale", to->service_scale,
                 "multiply every service time (e.g. 0.25 for a smaller, faster model)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  tb->add_option("--concurrency", to->concurrency, "requests in service at once (0: unlimited)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  tb->add_option("--max-waiting", to->max_waiting, "waiting requests before 503")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  tb->callback([to] { fail_with(run_test_backend(*to)); });

  return tb;
}

// `gateway replay`: open-loop load.
CLI::App* register_replay(CLI::App* gw) {
  auto* rp = gw->add_subcommand(
      "replay",
      "Open-loop load: a constant rate, or an inference trace compressed to a multiple "
      "of the pool's capacity");
  auto lo = std::make_shared<LoadOptions>();
  auto trace_name = std::make_shared<std::string>();
  auto arrivals = std::make_shared<std::string>("poisson");
  auto headers = std::make_shared<std::vector<std::string>>();
  rp->add_option("--target", lo->target, "gateway host:port")->required();
  rp->add_option("--path", lo->path, "request path")->capture_default_str();
  rp->add_option("--rate", lo->rate, "constant mode: requests per second")->capture_default_str();
  rp->add_option("--duration", lo->duration_s, "constant mode: seconds")->capture_default_str();
  rp->add_option("--arrivals", *arrivals, "constant mode: poisson or uniform")
      ->check(CLI::IsMember({"poisson", "uniform"}))
      ->capture_default_str();
  rp->add_option("--service-us", lo->service_us, "constant mode: x-service-us to send");
  rp->add_option("--trace", *trace_name,
                 "trace mode: a CSV file, or `code` / `conv` for the Azure traces under "
                 "$SLUICE_TRACES/inference (default ../shared/traces)");
  rp->add_option("--load", lo->load, "trace mode: offered rate as a multiple of capacity")
      ->capture_default_str();
  rp->add_option("--slots", lo->slots, "trace mode: total backend concurrency of the pool");
  rp->add_option("--base-us", lo->model.base_us, "service model: fixed cost")
      ->capture_default_str();
  rp->add_option("--us-per-context-token", lo->model.us_per_context_token,
                 "service model: prefill cost")
      ->capture_default_str();
  rp->add_option("--us-per-generated-token", lo->model.us_per_generated_token,
                 "service model: decode cost")
      ->capture_default_str();
  rp->add_option("--max-duration", lo->max_duration_s, "trace mode: replay at most this long")
      ->capture_default_str();
  rp->add_option("--max-requests", lo->max_requests, "send at most this many")
      ->capture_default_str();
  rp->add_option("--class-mix", lo->class_mix, "e.g. critical=0.2,standard=0.5,sheddable=0.3");
  rp->add_option("--seed", lo->seed, "random seed (arrivals, classes)")->capture_default_str();
  rp->add_option("--timeout-ms", lo->timeout_ms, "per-request client timeout")
      ->capture_default_str();
  rp->add_option("--max-connections", lo->max_connections, "client connections at most")
      ->capture_default_str();
  rp->add_option("-H,--header", *headers, "extra header `name: value` (repeatable)");
  rp->add_flag("--json", lo->json, "print one JSON object");
  rp->callback([lo, trace_name, arrivals, headers] {
    lo->poisson = *arrivals == "poisson";
    for (const auto& h : *headers) {
      auto colon = h.find(':');
      if (colon == std::string::npos) {
        std::fprintf(stderr, "replay: bad --header '%s' (name: value)\n", h.c_str());
        fail_with(2);
      }
      auto v = h.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      lo->headers.emplace_back(h.substr(0, colon), v);
    }
    if (!trace_name->empty())
      lo->trace_file =
          *trace_name == "code" || *trace_name == "conv" ? azure_trace(*trace_name) : *trace_name;
    fail_with(run_load(*lo));
  });
  return rp;
}

}  // namespace

void register_commands(CLI::App& app) {
  auto* gw = app.add_subcommand(
      "gateway", "Inference gateway: HTTP reverse proxy with per-pool admission control");
  struct GatewayArgs {
    std::string config;
    std::string listen;
    std::string port_file;
    bool check = false;
  };
  auto ga = std::make_shared<GatewayArgs>();
  gw->add_option("-c,--config", ga->config, "gateway.yaml");
  gw->add_option("--listen", ga->listen, "override `listen` (host:port; port 0 picks a free one)");
  gw->add_option("--port-file", ga->port_file, "write the bound port to this file");
  gw->add_flag("--check", ga->check, "validate the configuration and exit");

  CLI::App* tb = register_test_backend(gw);
  CLI::App* rp = register_replay(gw);

  gw->callback([gw, tb, rp, ga] {
    if (tb->parsed() || rp->parsed()) return;
    if (ga->config.empty()) {
      std::fprintf(stderr, "sluice gateway: --config is required\n%s", gw->help().c_str());
      fail_with(2);
    }
    auto r = load_config_file(ga->config);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.error.c_str());
      fail_with(2);
    }
    if (!ga->listen.empty()) {
      auto hp = parse_host_port(ga->listen);
      if (!hp) {
        std::fprintf(stderr, "sluice gateway: --listen: must be host:port\n");
        fail_with(2);
      }
      r.config.listen = *hp;
    }
    if (ga->check) {
      std::printf("%s: ok (%zu pools, %zu tenants, %zu routes)\n", ga->config.c_str(),
                  r.config.pools.size(), r.config.tenants.size(), r.config.routes.size());
      return;
    }
    RunOptions opts;
    opts.port_file = ga->port_file;
    fail_with(run_gateway(r.config, opts));
  });
}

}  // namespace sluice::gateway
