#pragma once
// `sluice sbatch script.sh`: a Slurm batch script becomes a sluice Job. Its `#SBATCH` lines
// (and options given before the script, which win, as in Slurm) are read with Slurm's meaning:
// -J, -p/--partition (the queue), -G/--gpus, --gpus-per-node, --gres=gpu:N, -N, -n, -c, --mem,
// -t, -a/--array, -d/--dependency, -o, -e, -D/--chdir, --export, -H/--hold. Pure, so the tests
// read scripts without a server.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "cli/client_run.h"

namespace sluice::cli {

struct SbatchArgs {
  RunArgs run;
  int nodes = -1;                  // -N: pods of the gang
  int ntasks = -1;                 // -n: pods of the gang when -N is not given
  int gpus_total = -1;             // -G/--gpus: the job's GPUs, split over its pods
  int gpus_per_node = -1;          // --gpus-per-node, --gres=gpu:N: per pod
  int gpus_per_task = -1;          // --gpus-per-task: per task (x the tasks of a pod)
  int ntasks_per_node = -1;        // --ntasks-per-node: tasks of one pod
  int cpus_per_task = -1;          // -c: CPUs per task (x the tasks of a pod)
  std::vector<std::string> notes;  // options read but not used ("--mail-type ignored")
  bool parsable = false;           // --parsable: print only the job id
  bool quiet = false;              // -Q, --quiet: print nothing on success
  bool wait = false;               // -W, --wait: until the job ends, exit with its status
  std::string wrap;                // --wrap: the command line is the script
};

// The script of `sbatch --wrap "CMD"`: CMD run by sh, as Slurm writes it.
std::string wrap_script(const std::string& command);

// The words of the script's #SBATCH lines, in order: the lines before the first command (blank
// lines and other comments are skipped, as sbatch does). A word keeps quotes' contents.
std::vector<std::string> sbatch_words(const std::string& script);

// Applies Slurm options ("--array=0-3", "-N", "2", "-o" "out-%j.txt") to `args`; "" when done,
// else what is wrong (`where` names the source: "script.sh" or "the command line").
std::string apply_sbatch_options(const std::vector<std::string>& words, SbatchArgs& args,
                                 const std::string& where);

// The gang, GPUs per pod and the command (the script's text run by its #! interpreter, so the
// nodes need not have the file) once every option is read. "" when done, else what is wrong.
// A pod is one of Slurm's nodes: -N K gives K pods on K distinct nodes, each holding
// --ntasks-per-node tasks (their GPUs and CPUs); `srun` in the script launches the tasks
// (docs/cli.md, "Job steps"). A gang of several pods runs `srun --batch -- SCRIPT`: the script
// on the first pod, the others wait for its steps.
std::string finish_sbatch(SbatchArgs& args, const std::string& script_path,
                          const std::string& script_text, const std::vector<std::string>& argv);

// Whether OPT (a word before the script: "-N", "--gpus", "--bogus") takes the next word as its
// value: only options sbatch knows do ("--opt=value" and "-N2" carry their own). An unknown option
// takes none, so that `sbatch --bogus job.sh` names --bogus instead of reading job.sh as its value.
bool sbatch_takes_value(const std::string& opt);

// The options `sluice sbatch` reads, for its --help: each value option by its names, then the
// flags, then those read and ignored.
std::string sbatch_options_text();

// --dependency, --hold, --array, --output, --error on `sluice run` (and sbatch's own parser).
void add_job_control(CLI::App* cmd, RunArgs& args);

// `sluice sbatch`, `sluice hold|release|requeue`, `sluice history`, `sluice usage`
// (client_jobctl.cc).
void register_sbatch(CLI::App& app);
// A submission's reply: one line per job, or one line for the tasks of an array.
std::string array_submitted_text(const nlohmann::json& reply);
void register_jobctl(CLI::App& app);

}  // namespace sluice::cli
