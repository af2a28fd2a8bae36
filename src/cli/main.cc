// sluice: one binary, subcommands (CLI11).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "build_info.h"
#include "cli/client_parse_errors.h"
#include "cli/client_pty.h"
#include "cli/commands.h"
#include "cli/secret_args.h"
#ifdef SLUICE_HAVE_SIM
#include "sim/cli.h"
#endif
#ifdef SLUICE_HAVE_GATEWAY
#include "gateway/cli.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"sluice: a queue-based GPU cluster scheduler"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("sluice ") + sluice::build_version() + " (commit " +
                                        sluice::build_commit() + ")");
  sluice::cli::register_check(app);
  sluice::cli::register_plan(app);
  sluice::cli::register_serve(app);
  sluice::cli::register_up(app);
  sluice::cli::register_agent(app);
  sluice::cli::register_client(app);
  sluice::cli::register_kubeconfig(app);
  sluice::cli::register_step(app);
  sluice::cli::register_advise(app);
#ifdef SLUICE_HAVE_SIM
  sluice::sim::register_commands(app);
#endif
#ifdef SLUICE_HAVE_GATEWAY
  sluice::gateway::register_commands(app);
#endif
  // The parser reads a copy: secrets are blanked in what /proc/<pid>/cmdline shows.
  std::vector<std::string> args = sluice::cli::hide_secret_args(argc, argv);
  // Run as `srun` (the link on a pod's PATH, docs/cli.md "Job steps"): `sluice srun`.
  if (!args.empty() && std::filesystem::path(args[0]).filename() == "srun")
    args.insert(args.begin() + 1, "srun");
  // Its words are the command's, not CLI11's (`srun --batch -- sh -c ...`): read as they are.
  if (args.size() > 1 && args[1] == "srun")
    return sluice::cli::srun_main(std::vector<std::string>(args.begin() + 2, args.end()));
  // The command's words ("nodes cordon"), for what a wrong option is told. An unknown command is
  // an error with or without --help (CLI11 would print the main help and exit 0 for `sluice
  // nosuchcommand --help`), so that a script can tell a missing command from a present one: the
  // first word that is not an option names the command.
  std::string command;
  const CLI::App* at = &app;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].rfind('-', 0) == 0) continue;
    const auto sub = at->get_subcommands([&](const CLI::App* s) { return s->check_name(args[i]); });
    if (sub.empty() && command.empty()) {
      std::cerr << "sluice: unknown command '" << args[i] << "'; see sluice --help\n";
      return 2;
    }
    if (sub.empty()) break;
    command += (command.empty() ? "" : " ") + args[i];
    at = sub.front();
  }
  std::vector<char*> arg_ptrs;
  for (auto& a : args) arg_ptrs.push_back(a.data());
  arg_ptrs.push_back(nullptr);
  try {
    app.parse(static_cast<int>(args.size()), arg_ptrs.data());
  } catch (const sluice::cli::ExitStatus& e) {  // `sluice run --pty`: the pod's status
    return e.code;
  } catch (const CLI::ExtrasError& e) {
    const std::string text = sluice::cli::unknown_option_text(command, e.what());
    if (text.empty()) {
      app.exit(e);
      return 1;
    }
    std::cerr << "error: " << text << "\n";
    return 1;
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0, a command's own failure keeps its code; a wrong option or a
    // missing file exits 1, as docs/cli.md says, not with CLI11's own codes (100 and up).
    const int code = app.exit(e);
    return code >= 100 ? 1 : code;
  }
  return 0;
}
