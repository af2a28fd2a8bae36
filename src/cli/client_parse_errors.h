#pragma once
// What a wrong command line is told, where CLI11's own words would confuse: an unknown option
// reads "The following arguments were not expected: -- --bogus" (the `--` and the command's own
// words mixed in); sluice names the option and the command instead.
#include <string>

namespace sluice::cli {

// "sluice run: unknown option --bogus (sluice run --help lists them)" from CLI11's ExtrasError
// message; "" when the message names no option (a stray word is left to CLI11's text).
// `command` is the command's words ("run", "nodes cordon").
std::string unknown_option_text(const std::string& command, const std::string& cli11_message);

}  // namespace sluice::cli
