// `sluice check FILE...`: validate configuration files and print a summary. Exit 0 when valid.
#include <string>

#include "cli/client_term.h"
#include "cli/commands.h"
#include "cli/load_files.h"
#include "server/auth.h"

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
    // ServerAuth documents, as `sluice serve` reads them (tokens, namespaces, the join token).
    std::vector<Source> sources;
    for (const auto& f : *files)
      if (auto src = read_source(f)) sources.push_back(std::move(*src));
    auto auth = server::parse_auth(sources);
    if (!auth) {
      print_err("error: " + auth.error() + "\n");
      throw CLI::RuntimeError(1);
    }
    std::string text = summarize(out->config);
    if (auth->enabled() || !auth->join_token.empty())
      text += "auth: " + std::to_string(auth->tokens.size()) + " tokens" +
              (auth->join_token.empty() ? "" : ", a join token") + "\n";
    if (!out->jobs.empty()) text += "jobs: " + std::to_string(out->jobs.size()) + "\n";
    for (const auto& n : out->notes) text += "note: " + n + "\n";
    print_out(text + "ok (" + std::to_string(out->config.warnings.size()) + " warnings)\n");
  });
}

}  // namespace sluice::cli
