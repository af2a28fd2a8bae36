// The simulator's commands alone: `build/bench/sim_cli sim run ...` is `sluice sim run ...`
// (the same src/sim code) without the server, agent and client, so that a benchmark build of
// another commit needs only the core (bench/core_before_after.sh, bench/sim_scale.sh). Not a
// test.
#include <CLI/CLI.hpp>

#include "sim/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"sluice's simulator (benchmark build)"};
  app.require_subcommand(1);
  sluice::sim::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code >= 100 ? 1 : code;
  }
  return 0;
}
