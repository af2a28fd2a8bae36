#include "cli/client_export.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

const char* const kEnv[] = {"HOME=/home/alice",
                            "PATH=/usr/bin:/home/alice/bin",
                            "MYVAR=hello",
                            "SLUICE_TOKEN=secret",
                            "SLUICE_SERVER=http://ctl:7070",
                            "PWD=/home/alice/proj",
                            "OLDPWD=/tmp",
                            "SHLVL=2",
                            "_=/usr/bin/sluice",
                            "BASH_FUNC_f%%=() { true; }",
                            "BAD=\xff\xfe",
                            nullptr};

EnvList env(const std::string& spec) {
  auto out = exported_env(spec, kEnv);
  EXPECT_TRUE(out.ok) << out.failure.message;
  return out.value;
}

TEST(ClientExport, AllIsTheCallersEnvironmentLessShellAndSluiceVariables) {
  std::vector<std::string> skipped;
  auto out = exported_env("ALL", kEnv, &skipped);
  ASSERT_TRUE(out.ok);
  // Sorted by name; no SLUICE_* (the token), PWD, OLDPWD, SHLVL, _, functions, bad UTF-8.
  EXPECT_EQ(
      out.value,
      (EnvList{{"HOME", "/home/alice"}, {"MYVAR", "hello"}, {"PATH", "/usr/bin:/home/alice/bin"}}));
  EXPECT_EQ(skipped, std::vector<std::string>{"BAD"});
  EXPECT_EQ(env(""), env("ALL"));  // Slurm's default
}

TEST(ClientExport, NoneAndListsAsSlurm) {
  EXPECT_TRUE(env("NONE").empty());
  EXPECT_EQ(env("MYVAR,UNSET,OMP_NUM_THREADS=4"),
            (EnvList{{"MYVAR", "hello"}, {"OMP_NUM_THREADS", "4"}}));
  auto all_plus = env("ALL,MYVAR=override,X=1");
  EXPECT_EQ(all_plus.size(), 4u);
  EXPECT_EQ(all_plus[1], (std::pair<std::string, std::string>{"MYVAR", "override"}));
  EXPECT_EQ(all_plus[3], (std::pair<std::string, std::string>{"X", "1"}));
}

TEST(ClientExport, RefusesWhatCannotBeRight) {
  auto message = [](const std::string& spec) { return exported_env(spec, kEnv).failure.message; };
  EXPECT_EQ(message("MYVAR,ALL"),
            "error: --export: ALL must come first (e.g. ALL,OMP_NUM_THREADS=4)");
  EXPECT_EQ(message("SLUICE_TOKEN"),
            "error: --export: SLUICE_TOKEN: SLUICE_* variables are set by sluice");
  EXPECT_EQ(message("1X=2"), "error: --export: \"1X=2\" is not NAME or NAME=VALUE");
  EXPECT_EQ(exported_env("=x", kEnv).failure.exit_code, 1);
}

}  // namespace
}  // namespace sluice::cli
