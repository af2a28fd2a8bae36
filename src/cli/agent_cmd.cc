// Placeholder until the command lands (replaced in this change series).
#include "cli/commands.h"

namespace sluice::cli {
void register_agent(CLI::App&) {}
}  // namespace sluice::cli
