#include "cli/client_parse_errors.h"

#include <cctype>
#include <sstream>

namespace sluice::cli {

std::string unknown_option_text(const std::string& command, const std::string& cli11_message) {
  const auto colon = cli11_message.find(": ");
  if (colon == std::string::npos) return {};
  std::istringstream words(cli11_message.substr(colon + 2));
  std::string w;
  while (words >> w) {
    if (w == "--" || w.size() < 2 || w[0] != '-') continue;
    if (std::isdigit(static_cast<unsigned char>(w[1]))) continue;  // -5: a value
    const std::string name = w.substr(0, w.find('='));
    const std::string cmd = command.empty() ? "sluice" : "sluice " + command;
    return cmd + ": unknown option " + name + " (" + cmd + " --help lists them)";
  }
  return {};
}

}  // namespace sluice::cli
