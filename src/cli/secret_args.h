#pragma once
// Secrets given on the command line (--join-token T, --token T) are visible to every user of
// the machine in /proc/<pid>/cmdline, pods included. main() parses a copy and blanks them in
// the original argument area, which is what /proc shows from then on.
#include <string>
#include <vector>

namespace sluice::cli {

// The options whose values are secrets.
inline const std::vector<std::string>& secret_options() {
  static const std::vector<std::string> k = {"--join-token", "--token"};
  return k;
}

// Returns a copy of argv[0..argc) for the parser, then overwrites in argv the value of every
// secret option (`--opt VALUE` and `--opt=VALUE`) with 'x'.
std::vector<std::string> hide_secret_args(int argc, char** argv);

}  // namespace sluice::cli
