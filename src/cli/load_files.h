#pragma once
// Reading configuration files for CLI commands: all files into one Config, errors to stderr.
#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"

namespace sluice::cli {

// Loads every file as one configuration. Prints errors (and warnings unless quiet) to stderr;
// nullopt when anything failed.
// `pre`: sources already read (a fetched state), loaded before the files.
std::optional<LoadOutput> load_files(const std::vector<std::string>& files, bool strict,
                                     bool quiet_warnings = false, std::vector<Source> pre = {});

}  // namespace sluice::cli
