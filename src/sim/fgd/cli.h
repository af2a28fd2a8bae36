#pragma once
// `sluice sim fgd`: the fragmentation experiment of the FGD paper on the Alibaba openb trace.
#include <CLI/CLI.hpp>

namespace sluice::sim {

void register_fgd_command(CLI::App& sim_subcommand);

}  // namespace sluice::sim
