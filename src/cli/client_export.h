#pragma once
// `sluice run --export`: which of the caller's environment variables the job gets, as Slurm's
// --export does (default ALL). Built from an environ-style list so the tests need no process
// environment.
#include <string>
#include <utility>
#include <vector>

#include "cli/client_http.h"

namespace sluice::cli {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// spec: "ALL" (or ""), "NONE", or a comma-separated list of NAME (the caller's value, if set)
// and NAME=VALUE, optionally starting with ALL ("ALL,OMP_NUM_THREADS=4"). ALL takes every
// variable except those that belong to the caller's shell or to sluice: SLUICE_* (the token
// must not reach jobs), PWD, OLDPWD, SHLVL, _, names that are not identifiers (exported shell
// functions) and values a submission may not carry (over 64 KiB, not UTF-8). `skipped` gets the
// names ALL left out for their value. A failure names the bad item (exit 1).
Outcome<EnvList> exported_env(const std::string& spec, const char* const* environ,
                              std::vector<std::string>* skipped = nullptr);

}  // namespace sluice::cli
