// `sluice sbatch`: #SBATCH lines and sbatch options become a sluice Job (cli/client_sbatch.h).
#include "cli/client_sbatch.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

const char* kScript = R"(#!/bin/bash
# a comment
#SBATCH -J train --partition=gpu
#SBATCH -N 2 -G 8 -c 4 --mem=16G
#SBATCH -t 1:30:00 --array=0-3%2
#SBATCH -d afterok:12 -o "out %A_%a.txt" -e err-%j.txt
#SBATCH --chdir=/scratch/a --export=NONE --mail-type=END

echo "task $SLURM_ARRAY_TASK_ID"
#SBATCH --gpus=1
)";

// Slurm's output switches and --wrap are read, not ignored (issue 43).
TEST(Sbatch, ParsableQuietAndWrapAreRead) {
  SbatchArgs a;
  ASSERT_EQ(apply_sbatch_options({"--parsable", "-Q", "--wrap", "echo hi"}, a, "the command line"),
            "");
  EXPECT_TRUE(a.parsable);
  EXPECT_TRUE(a.quiet);
  EXPECT_FALSE(a.wait);
  SbatchArgs w;
  ASSERT_EQ(apply_sbatch_options({"-W"}, w, "x"), "");
  EXPECT_TRUE(w.wait);
  EXPECT_EQ(a.wrap, "echo hi");
  EXPECT_TRUE(a.notes.empty());
  SbatchArgs b;
  ASSERT_EQ(apply_sbatch_options({"--wrap=sleep 1"}, b, "the command line"), "");
  EXPECT_EQ(b.wrap, "sleep 1");
  EXPECT_EQ(wrap_script("sleep 1"), "#!/bin/sh\nsleep 1\n");
  SbatchArgs c;
  EXPECT_EQ(apply_sbatch_options({"--wrap"}, c, "x"), "x: --wrap needs a command");
}

// A GPU type names the model (--gpus=a100:1 must not run on H100), and --gpus-per-task counts
// per task: -N 1 --ntasks-per-node=8 --gpus-per-task=1 is 8 GPUs on the one pod, as in Slurm.
TEST(Sbatch, GpuTypesAndGpusPerTask) {
  SbatchArgs a;
  ASSERT_EQ(apply_sbatch_options({"--gpus=a100:2"}, a, "x"), "");
  ASSERT_EQ(finish_sbatch(a, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(a.run.gpus, 2);
  EXPECT_EQ(a.run.gpu_models, std::vector<std::string>{"a100"});
  SbatchArgs g;
  ASSERT_EQ(apply_sbatch_options({"--gres=gpu:h100:4"}, g, "x"), "");
  ASSERT_EQ(finish_sbatch(g, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(g.run.gpus, 4);
  EXPECT_EQ(g.run.gpu_models, std::vector<std::string>{"h100"});
  SbatchArgs t;
  ASSERT_EQ(apply_sbatch_options({"-N", "1", "--ntasks-per-node=8", "--gpus-per-task=1"}, t, "x"),
            "");
  ASSERT_EQ(finish_sbatch(t, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(t.run.gang, 1);
  EXPECT_EQ(t.run.gpus, 8);
  SbatchArgs n;  // -N 2 -n 8: four tasks a pod
  ASSERT_EQ(apply_sbatch_options({"-N", "2", "-n", "8", "--gpus-per-task", "1"}, n, "x"), "");
  ASSERT_EQ(finish_sbatch(n, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(n.run.gang, 2);
  EXPECT_EQ(n.run.gpus, 4);
}

TEST(Sbatch, ReadsTheLinesBeforeTheFirstCommand) {
  auto words = sbatch_words(kScript);
  SbatchArgs a;
  ASSERT_EQ(apply_sbatch_options(words, a, "job.sh"), "");
  ASSERT_EQ(finish_sbatch(a, "/home/u/job.sh", kScript, {"--lr", "3"}), "");
  const RunArgs& r = a.run;
  EXPECT_EQ(r.name, "train");
  EXPECT_EQ(r.queue, "gpu");
  EXPECT_EQ(r.gang, 2);
  EXPECT_EQ(r.gpus, 4);  // -G 8 over -N 2; the #SBATCH after the command is not read
  EXPECT_EQ(r.cpu, "4");
  EXPECT_EQ(r.memory, "16Gi");
  EXPECT_EQ(r.walltime, "1:30:00");
  EXPECT_EQ(r.array, "0-3%2");
  EXPECT_EQ(r.dependency, "afterok:12");
  EXPECT_EQ(r.output, "out %A_%a.txt");
  EXPECT_EQ(r.error, "err-%j.txt");
  EXPECT_EQ(r.chdir, "/scratch/a");
  EXPECT_EQ(r.export_spec, "NONE");
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("--mail-type"), std::string::npos);
  // The script's text runs under its #! interpreter; its name is $0, then its arguments. Two
  // nodes: `srun --batch` runs it on the first pod, the other waits for its steps.
  EXPECT_TRUE(r.one_per_node);
  ASSERT_EQ(r.command.size(), 9u);
  EXPECT_EQ(r.command[0], "srun");
  EXPECT_EQ(r.command[1], "--batch");
  EXPECT_EQ(r.command[2], "--");
  EXPECT_EQ(r.command[3], "/bin/bash");
  EXPECT_EQ(r.command[4], "-c");
  EXPECT_EQ(r.command[5], kScript);
  EXPECT_EQ(r.command[6], "job.sh");
  EXPECT_EQ(r.command[8], "3");
}

// Slurm's -N K --ntasks-per-node T: K pods, each on a node of its own, each with T tasks'
// GPUs and CPUs; the tasks' count reaches the pods (and srun) as SLURM_NTASKS[_PER_NODE].
TEST(Sbatch, NodesHoldTheirTasks) {
  SbatchArgs a;
  ASSERT_EQ(apply_sbatch_options({"-N", "2", "--ntasks-per-node=2", "-c", "3", "--gpus-per-task=1"},
                                 a, "x"),
            "");
  ASSERT_EQ(finish_sbatch(a, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(a.run.gang, 2);
  EXPECT_TRUE(a.run.one_per_node);
  EXPECT_EQ(a.run.gpus, 2);
  EXPECT_EQ(a.run.cpu, "6");
  EXPECT_EQ(a.run.env, (std::vector<std::string>{"SLURM_NTASKS_PER_NODE=2", "SLURM_NTASKS=4"}));
  auto doc = build_run_job(a.run, "");
  ASSERT_TRUE(doc.ok);
  EXPECT_EQ(doc.value["spec"]["maxPodsPerNode"], 1);
  EXPECT_EQ(doc.value["spec"]["pods"], 2);
  // -n alone: one pod per task, on any nodes (no limit), the script run as it is.
  SbatchArgs n;
  ASSERT_EQ(apply_sbatch_options({"-n", "3"}, n, "x"), "");
  ASSERT_EQ(finish_sbatch(n, "j.sh", "#!/bin/sh\n", {}), "");
  EXPECT_EQ(n.run.gang, 3);
  EXPECT_FALSE(n.run.one_per_node);
  EXPECT_TRUE(n.run.env.empty());
  EXPECT_EQ(n.run.command[0], "srun");
  auto free_doc = build_run_job(n.run, "");
  ASSERT_TRUE(free_doc.ok);
  EXPECT_FALSE(free_doc.value["spec"].contains("maxPodsPerNode"));
  // More tasks than the nodes hold.
  SbatchArgs bad;
  ASSERT_EQ(apply_sbatch_options({"-N", "2", "--ntasks-per-node=1", "-n", "3"}, bad, "x"), "");
  EXPECT_NE(finish_sbatch(bad, "j.sh", "", {}).find("do not fit on 2 nodes"), std::string::npos);
}

TEST(Sbatch, CommandLineWinsAndShortFormsAttach) {
  SbatchArgs a;
  ASSERT_EQ(apply_sbatch_options(sbatch_words(kScript), a, "job.sh"), "");
  ASSERT_EQ(apply_sbatch_options({"-Jother", "-N1", "--gres=gpu:2", "-H"}, a, "cmd"), "");
  ASSERT_EQ(finish_sbatch(a, "job.sh", kScript, {}), "");
  EXPECT_EQ(a.run.name, "other");
  EXPECT_EQ(a.run.gang, 1);
  EXPECT_EQ(a.run.gpus, 2);  // --gres is per node
  EXPECT_TRUE(a.run.hold);
}

TEST(Sbatch, DefaultsAndErrors) {
  SbatchArgs a;
  ASSERT_EQ(finish_sbatch(a, "dir/plain.sh", "echo hi\n", {}), "");
  EXPECT_EQ(a.run.command[0], "/bin/sh");  // no #!
  EXPECT_EQ(a.run.name, "plain.sh");
  EXPECT_EQ(a.run.cpu, "1");  // a job must ask for something: one CPU, as sbatch
  SbatchArgs b;
  EXPECT_NE(apply_sbatch_options({"--frobnicate=1"}, b, "x.sh").find("not an sbatch option"),
            std::string::npos);
  EXPECT_NE(apply_sbatch_options({"-N"}, b, "x.sh").find("needs a value"), std::string::npos);
  EXPECT_NE(apply_sbatch_options({"--mem=lots"}, b, "x.sh").find("expected a size"),
            std::string::npos);
  SbatchArgs c;
  ASSERT_EQ(apply_sbatch_options({"-N", "3", "-G", "4"}, c, "x.sh"), "");
  EXPECT_NE(finish_sbatch(c, "x.sh", "", {}).find("does not split evenly"), std::string::npos);
}

TEST(Sbatch, RunDocumentCarriesJobControl) {
  RunArgs r;
  r.cpu = "1";
  r.command = {"true"};
  r.array = "0-9%2";
  r.dependency = "afterany:3";
  r.hold = true;
  r.output = "o-%j";
  auto doc = build_run_job(r, "");
  ASSERT_TRUE(doc.ok);
  EXPECT_EQ(doc.value["spec"]["array"], "0-9%2");
  EXPECT_EQ(doc.value["spec"]["dependency"], "afterany:3");
  EXPECT_EQ(doc.value["spec"]["hold"], true);
  EXPECT_EQ(doc.value["spec"]["output"], "o-%j");
  r.array = "9-0";
  EXPECT_FALSE(build_run_job(r, "").ok);
}

}  // namespace
}  // namespace sluice::cli

namespace sluice::cli::sbatch_value_test {

TEST(Sbatch, OnlyKnownOptionsTakeTheNextWord) {
  EXPECT_TRUE(sbatch_takes_value("-N"));
  EXPECT_TRUE(sbatch_takes_value("--gpus"));
  EXPECT_TRUE(sbatch_takes_value("--wrap"));
  EXPECT_TRUE(sbatch_takes_value("--mail-type"));  // read and ignored, with its value
  EXPECT_FALSE(sbatch_takes_value("--parsable"));
  EXPECT_FALSE(sbatch_takes_value("-H"));
  EXPECT_FALSE(sbatch_takes_value("--bogus"));  // so `sbatch --bogus job.sh` names --bogus
}

TEST(Sbatch, TheHelpListsEveryOptionRead) {
  const std::string text = sbatch_options_text();
  for (const char* o : {"-N/--nodes V", "-G/--gpus V", "--gpus-per-task V", "-t/--time V",
                        "--wrap CMD", "--parsable", "--mail-type"})
    EXPECT_NE(text.find(o), std::string::npos) << o << " in\n" << text;
  // -q/--qos is read past with a note: listed among the ignored, after "Read and ignored".
  EXPECT_GT(text.find("-q/--qos"), text.find("Read and ignored"));
}

}  // namespace sluice::cli::sbatch_value_test
