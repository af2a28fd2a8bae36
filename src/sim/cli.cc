#include "sim/cli.h"

#include "sim/run_cli.h"

#if __has_include("sim/fgd/cli.h")
#include "sim/fgd/cli.h"
#define SLUICE_HAVE_FGD 1
#endif

namespace sluice::sim {

void register_commands(CLI::App& app) {
  auto* sim = app.add_subcommand("sim", "Simulation: replay traces through the scheduling core");
  sim->require_subcommand(1);
  register_run_command(*sim);
#ifdef SLUICE_HAVE_FGD
  register_fgd_command(*sim);
#endif
}

}  // namespace sluice::sim
