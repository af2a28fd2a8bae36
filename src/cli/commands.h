#pragma once
// Subcommands of the `sluice` binary; each file registers one.
#include <CLI/CLI.hpp>

namespace sluice::cli {

void register_check(CLI::App& app);
void register_plan(CLI::App& app);

}  // namespace sluice::cli
