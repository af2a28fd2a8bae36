#pragma once
// Subcommands of the `sluice` binary; each file registers one.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sluice::cli {

void register_check(CLI::App& app);
void register_plan(CLI::App& app);
void register_serve(CLI::App& app);       // serve (serve_cmd.cc)
void register_up(CLI::App& app);          // up (up_cmd.cc)
void register_agent(CLI::App& app);       // agent (agent_cmd.cc)
void register_client(CLI::App& app);      // submit, run, jobs, queues, nodes, cancel, logs, explain
void register_kubeconfig(CLI::App& app);  // kubeconfig (kubeconfig_cmd.cc)
void register_step(CLI::App& app);        // srun, a job step inside a job (step_cmd.cc)
void register_advise(CLI::App& app);      // advise, right-sizing (advise_cmd.cc)
// `sluice srun WORDS...` (main() calls it before CLI11 parses: the words are srun's own and
// the command's); its exit status.
int srun_main(const std::vector<std::string>& words);

// The running `sluice` binary (/proc/self/exe), which agents start their fencer with.
std::string self_exe();

}  // namespace sluice::cli
