#pragma once
// The control plane's command-line options, which `sluice serve` and `sluice up` share.
#include <CLI/CLI.hpp>

#include <string>

#include "server/server.h"

namespace sluice::cli {

struct ServeArgs {
  server::ServeOptions opt;
  double agent_timeout_s = 10;
  double fence_margin_s = 2;
  std::string otlp_endpoint;  // empty: $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else no traces
};

// Every server option but --config, which each command describes in its own words; in the
// order `--help` lists them.
void add_server_options(CLI::App* cmd, ServeArgs& a);

}  // namespace sluice::cli
