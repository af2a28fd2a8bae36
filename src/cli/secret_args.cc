#include "cli/secret_args.h"

#include <algorithm>
#include <cstring>

namespace sluice::cli {

std::vector<std::string> hide_secret_args(int argc, char** argv) {
  std::vector<std::string> copy(argv, argv + argc);
  const auto& secrets = secret_options();
  auto blank = [](char* s) { std::memset(s, 'x', std::strlen(s)); };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // a command's own arguments (sluice run -- CMD...)
    if (std::find(secrets.begin(), secrets.end(), arg) != secrets.end()) {
      if (i + 1 < argc) blank(argv[++i]);
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq != std::string::npos &&
        std::find(secrets.begin(), secrets.end(), arg.substr(0, eq)) != secrets.end())
      blank(argv[i] + eq + 1);
  }
  return copy;
}

}  // namespace sluice::cli
