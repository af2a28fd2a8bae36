// `sluice check FILE...`: validate configuration files and print a summary. Exit 0 when valid.
#include <iostream>

#include "cli/commands.h"
#include "cli/load_files.h"

namespace sluice::cli {

void register_check(CLI::App& app) {
  auto* cmd = app.add_subcommand("check", "Validate configuration files and print a summary");
  auto files = std::make_shared<std::vector<std::string>>();
  auto strict = std::make_shared<bool>(false);
  cmd->add_option("files", *files, "YAML files (Kueue manifests, sluice kinds, jobs)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--strict", *strict, "Treat warnings as errors");
  cmd->callback([files, strict] {
    auto out = load_files(*files, *strict);
    if (!out) throw CLI::RuntimeError(1);
    std::cout << summarize(out->config);
    if (!out->jobs.empty()) std::cout << "jobs: " << out->jobs.size() << "\n";
    for (const auto& n : out->notes) std::cout << "note: " << n << "\n";
    std::cout << "ok (" << out->config.warnings.size() << " warnings)\n";
  });
}

}  // namespace sluice::cli
