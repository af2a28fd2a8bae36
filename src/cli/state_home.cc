#include "cli/state_home.h"

#include <cstdlib>

namespace sluice::cli {

std::string up_state_dir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/sluice/up";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.local/state/sluice/up";
  return {};
}

}  // namespace sluice::cli
