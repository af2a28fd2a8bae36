#pragma once
#include <CLI/CLI.hpp>

namespace sluice::sim {

// Adds `sluice sim ...` (fgd, and the trace-driven simulator commands).
void register_commands(CLI::App& app);

}  // namespace sluice::sim
