#pragma once
// `sluice gateway ...` subcommands: the gateway itself, `gateway test-backend` (a model backend
// stand-in for tests and benchmarks) and `gateway replay` (an open-loop load generator that
// replays inference traces or a constant rate).
#include <CLI/CLI.hpp>

namespace sluice::gateway {

void register_commands(CLI::App& app);

}  // namespace sluice::gateway
