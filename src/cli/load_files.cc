#include "cli/load_files.h"

#include "cli/client_term.h"

namespace sluice::cli {

std::optional<LoadOutput> load_files(const std::vector<std::string>& files, bool strict,
                                     bool quiet_warnings, std::vector<Source> pre) {
  std::vector<Source> sources = std::move(pre);
  bool failed = false;
  for (const auto& f : files) {
    auto src = read_source(f);
    if (!src) {
      print_err("error: " + src.error() + "\n");
      failed = true;
      continue;
    }
    sources.push_back(std::move(*src));
  }
  if (failed) return std::nullopt;
  LoadOptions options;
  options.strict = strict;
  // The server's own document: read by `sluice serve` (server/auth.h), checked by `check`.
  options.ignore_kinds = {"ServerAuth"};
  LoadOutput out = load(sources, options);
  for (const auto& e : out.errors) print_err("error: " + e + "\n");
  if (!quiet_warnings)
    for (const auto& w : out.config.warnings) print_err("warning: " + w + "\n");
  if (!out.ok()) return std::nullopt;
  return out;
}

}  // namespace sluice::cli
