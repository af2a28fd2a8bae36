// The client commands end to end against a stand-in server: argv in, stdout/stderr/exit code
// out, and the requests the server saw.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "fake_server.h"

namespace sluice::cli {
namespace {

using nlohmann::json;
using testing::FakeServer;

struct Ran {
  int code = 0;
  std::string out, err;
};

// Runs `sluice <args>` with only the client commands registered, as main() would.
Ran run(std::vector<std::string> args) {
  CLI::App app{"sluice"};
  app.require_subcommand(1);
  register_client(app);
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  Ran r;
  std::vector<const char*> argv{"sluice"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  } catch (const CLI::ParseError& e) {
    r.code = app.exit(e, out, err);
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

class ClientCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    // The environment must not choose the server for these tests.
    unsetenv("SLUICE_SERVER");
    unsetenv("SLUICE_TOKEN");
    fake_.post("/v1/jobs", [](const httplib::Request&, httplib::Response& res) {
      res.status = 202;
      res.set_content(R"({"jobs":[{"id":17,"name":"bert","queue":"team-a"}]})", "application/json");
    });
    fake_.get("/v1/jobs", [](const httplib::Request& req, httplib::Response& res) {
      // limit=1: one more job matched (the server says the list was cut).
      const bool cut = req.get_param_value("limit") == "1";
      res.set_content(
          std::string(R"({"jobs":[{"id":17,"name":"bert","user":"alice","namespace":"nlp",
        "queue":"train","state":"pending","gpus":8,"gpu_milli":8000,"placement":[],
        "reason":"waiting for quota"}], "truncated": )") +
              (cut ? "true}" : "false}"),
          "application/json");
    });
    // Job 17 runs, then (from the second look on) has succeeded: `logs -f` follows it.
    fake_.get(R"(/v1/jobs/(\d+))", [this](const httplib::Request&, httplib::Response& res) {
      const bool done = ++job_looks_ > 1;
      res.set_content(json{{"id", 17},
                           {"state", done ? "succeeded" : "running"},
                           {"placement", json::array({{{"pod", 0}, {"node", "n1"}}})}}
                          .dump(),
                      "application/json");
    });
    fake_.get(R"(/v1/jobs/(\d+)/explain)", [](const httplib::Request& req, httplib::Response& res) {
      json j = {{"id", std::stoi(req.matches[1])},
                {"state", "pending"},
                {"explanation", "job 17 waits: quota"}};
      res.set_content(j.dump(), "application/json");
    });
    fake_.get(R"(/v1/jobs/(\d+)/logs)", [](const httplib::Request& req, httplib::Response& res) {
      // The log is "epoch 1 loss 0.5\n", then "epoch 2\n" more from offset 17 on.
      if (req.has_param("offset")) {
        res.set_header("X-Sluice-Log-Size", "25");
        res.set_content(req.get_param_value("offset") == "17" ? "epoch 2\n" : "", "text/plain");
        return;
      }
      res.set_header("X-Sluice-Log-Size", "17");
      res.set_content("epoch 1 loss 0.5\n", "text/plain");
    });
    fake_.post(R"(/v1/jobs/(\d+)/cancel)", [](const httplib::Request& req, httplib::Response& res) {
      if (req.matches[1] == "404") {
        res.status = 404;
        res.set_content(R"({"error":"no job 404","details":[]})", "application/json");
        return;
      }
      // Job 66's name holds a window-title sequence (an old record, a hostile server).
      const std::string name = req.matches[1] == "66" ? "evil\x1b]0;pwned\x07" : "bert";
      json j = {{"id", std::stoi(req.matches[1])}, {"name", name}, {"state", "cancelled"}};
      res.set_content(j.dump(), "application/json");
    });
    fake_.get("/v1/queues", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"queues":[]})", "application/json");
    });
    fake_.get("/v1/localqueues", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"local_queues":[{"namespace":"nlp","name":"default",
        "cluster_queue":"team","pending":1,"running":2,"cluster_queue_pending":5,
        "usage":[{"resource":"nvidia.com/gpu","used":"6","nominal":"8"}]}]})",
                      "application/json");
    });
    fake_.start();
  }

  FakeServer fake_;
  std::atomic<int> job_looks_{0};
};

TEST_F(ClientCmd, SubmitPostsEachFileAndPrintsTheIds) {
  std::string path = ::testing::TempDir() + "client_cmd_submit.yaml";
  std::ofstream(path) << "kind: Job\nmetadata: {name: bert}\nspec: {queue: train, gpus: 1}\n";
  auto r = run({"submit", path, "--server", fake_.url(), "--token", "t0k"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "submitted job 17 (bert) to queue team-a\n");
  auto seen = fake_.last();
  EXPECT_EQ(seen.method, "POST");
  EXPECT_EQ(seen.path, "/v1/jobs");
  EXPECT_EQ(seen.content_type, "application/yaml");
  EXPECT_EQ(seen.authorization, "Bearer t0k");
  EXPECT_NE(seen.body.find("queue: train"), std::string::npos);
  std::remove(path.c_str());
}

TEST_F(ClientCmd, SubmitRefusesAMissingFileWithoutCallingTheServer) {
  auto r = run({"submit", "/nonexistent/job.yaml", "--server", fake_.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/job.yaml"), std::string::npos) << r.err;
  EXPECT_TRUE(fake_.seen().empty());
}

TEST_F(ClientCmd, RunBuildsAJobFromTheCommandLine) {
  auto r = run({"run", "--server", fake_.url(), "--queue", "train", "--namespace", "nlp", "--gpus",
                "8", "--gang", "2", "--env", "A=1", "--preemptible", "--", "python", "train.py",
                "-x", "--lr=3"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "submitted job 17 (bert) to queue team-a\n");
  json doc = json::parse(fake_.last().body);
  EXPECT_EQ(fake_.last().content_type, "application/json");
  EXPECT_EQ(doc["kind"], "Job");
  EXPECT_EQ(doc["metadata"]["namespace"], "nlp");
  EXPECT_EQ(doc["spec"]["pods"], 2);
  EXPECT_EQ(doc["spec"]["gpus"], 8);
  EXPECT_EQ(doc["spec"]["preemptible"], true);
  EXPECT_EQ(doc["spec"]["env"]["A"], "1");
  EXPECT_EQ(doc["spec"]["command"], json({"python", "train.py", "-x", "--lr=3"}));
  EXPECT_EQ(doc["metadata"]["name"].get<std::string>().rfind("train-py-", 0), 0u);
}

// sbatch's and srun's task options (issue 43): -N spreads the pods over distinct nodes, -n is
// the tasks (no longer the namespace: the old use gets an error that says so), several tasks a
// node run under srun.
TEST_F(ClientCmd, RunTakesSlurmsTaskOptions) {
  auto r = run({"run", "-N", "2", "--ntasks-per-node", "2", "--gpus", "2", "--dry-run", "--",
                "python3", "train.py"});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["spec"]["pods"], 2);
  EXPECT_EQ(doc["spec"]["maxPodsPerNode"], 1);
  EXPECT_EQ(doc["spec"]["env"]["SLURM_NTASKS"], "4");
  EXPECT_EQ(doc["spec"]["command"], json({"srun", "--", "python3", "train.py"}));
  auto n = run({"run", "-n", "3", "--cpu", "1", "--dry-run", "--", "true"});
  ASSERT_EQ(n.code, 0) << n.err;
  json three = json::parse(n.out);
  EXPECT_EQ(three["spec"]["pods"], 3);
  EXPECT_FALSE(three["spec"].contains("maxPodsPerNode"));
  EXPECT_EQ(three["spec"]["command"], json({"true"}));
  auto old = run({"run", "-n", "team-a", "--cpu", "1", "--dry-run", "--", "true"});
  EXPECT_EQ(old.code, 1);
  EXPECT_NE(old.err.find("the namespace is --namespace"), std::string::npos) << old.err;
  auto both = run({"run", "-N", "2", "--gang", "2", "--cpu", "1", "--dry-run", "--", "true"});
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("exclude each other"), std::string::npos) << both.err;
}

// --wait, as srun: the submission on stderr, the pod's output on stdout as it comes, until
// the job ends (job 17 runs, then succeeds: status 0).
TEST_F(ClientCmd, RunWaitFollowsTheJob) {
  auto r = run({"run", "--server", fake_.url(), "--wait", "--cpu", "1", "--", "true"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "epoch 1 loss 0.5\nepoch 2\n");
  EXPECT_NE(r.err.find("submitted job 17"), std::string::npos) << r.err;
  auto arr =
      run({"run", "--server", fake_.url(), "-W", "--array", "0-1", "--cpu", "1", "--", "true"});
  EXPECT_EQ(arr.code, 1);
  EXPECT_NE(arr.err.find("--wait waits for one job"), std::string::npos) << arr.err;
}

TEST_F(ClientCmd, RunEnvRightBeforeTheCommand) {
  // -e takes one value, so `--` still separates the command (flags after it are the command's).
  auto r = run({"run", "-q", "train", "--gpus", "1", "-e", "A=1", "-e", "B=2", "--dry-run", "-e",
                "C=3", "--export=NONE", "--", "python3", "-u", "train.py", "--lr", "3e-4"});
  ASSERT_EQ(r.code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["spec"]["env"], json({{"A", "1"}, {"B", "2"}, {"C", "3"}}));
  EXPECT_EQ(doc["spec"]["command"], json({"python3", "-u", "train.py", "--lr", "3e-4"}));
}

// Slurm's habits: the shell's environment (not the token) and directory go with the job, the
// time is Slurm's, and -q may be left out.
TEST_F(ClientCmd, RunTakesTheShellsEnvironmentAndDirectory) {
  setenv("MYVAR", "hello", 1);
  setenv("SLUICE_TOKEN", "secret", 1);
  auto r = run({"run", "--server", fake_.url(), "--cpu", "1", "-t", "1-00:00:00", "--", "sh", "-c",
                "echo $MYVAR"});
  unsetenv("MYVAR");
  unsetenv("SLUICE_TOKEN");
  EXPECT_EQ(r.code, 0) << r.err;
  json doc = json::parse(fake_.last().body);
  EXPECT_EQ(doc["spec"]["env"]["MYVAR"], "hello");
  EXPECT_FALSE(doc["spec"]["env"].contains("SLUICE_TOKEN"));
  EXPECT_EQ(doc["spec"]["workingDir"], std::filesystem::current_path().string());
  EXPECT_EQ(doc["spec"]["walltime"], "86400s");
  EXPECT_FALSE(doc["spec"].contains("queue"));
  EXPECT_EQ(fake_.last().authorization, "Bearer secret");  // the token travels as a header only
}

TEST_F(ClientCmd, RunDryRunPrintsTheDocumentOnly) {
  auto r = run({"run", "--server", fake_.url(), "-q", "train", "--gpus", "1", "--name", "x",
                "--dry-run", "--", "true"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["metadata"]["name"], "x");
  EXPECT_TRUE(fake_.seen().empty());
}

TEST_F(ClientCmd, RunExcludesContradictoryFlags) {
  auto r =
      run({"run", "-q", "t", "--gpus", "1", "--preemptible", "--no-preemptible", "--", "true"});
  EXPECT_NE(r.code, 0);
}

TEST_F(ClientCmd, JobsSendsFiltersAndPrintsATable) {
  auto r = run({"jobs", "--server", fake_.url(), "--state", "pending,running", "-q", "train",
                "--limit", "5", "--user", "alice"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "ID  NAME  USER   NAMESPACE  QUEUE  STATE    GPUS  AGE  NODE(S)  REASON\n"
            "17  bert  alice  nlp        train  pending     8    -  -        waiting for quota\n");
  auto seen = fake_.last();
  EXPECT_EQ(seen.path, "/v1/jobs");
  EXPECT_EQ(seen.params.find("state")->second, "pending,running");
  EXPECT_EQ(seen.params.find("queue")->second, "train");
  EXPECT_EQ(seen.params.find("limit")->second, "5");
  EXPECT_EQ(seen.params.find("user")->second, "alice");
  EXPECT_EQ(seen.params.count("namespace"), 0u);
  EXPECT_EQ(r.err, "");
}

TEST_F(ClientCmd, JobsSaysWhenTheListIsCut) {
  auto r = run({"jobs", "--server", fake_.url(), "--limit", "1"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "(the newest 1 matching jobs; more match: narrow the filters or raise --limit)\n");
}

TEST_F(ClientCmd, JsonPrintsTheServersReplyAsIs) {
  auto r = run({"jobs", "--server", fake_.url(), "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["jobs"][0]["reason"], "waiting for quota");
  EXPECT_NE(r.out.find("\n  "), std::string::npos);  // pretty
}

TEST_F(ClientCmd, QueuesListsTheLocalQueuesAUserSubmitsTo) {
  auto r = run({"queues", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "NAMESPACE  QUEUE    CLUSTERQUEUE  PENDING  RUNNING  CQ PENDING  CQ GPU USED/NOMINAL\n"
      "nlp        default  team                1        2           5                  6/8\n");
  EXPECT_EQ(fake_.last().path, "/v1/localqueues");
}

TEST_F(ClientCmd, EmptyListingSaysSo) {
  auto r = run({"queues", "--cluster-queues", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "no queues\n");
}

TEST_F(ClientCmd, ServerAndTokenComeFromTheEnvironment) {
  setenv("SLUICE_SERVER", fake_.url().c_str(), 1);
  setenv("SLUICE_TOKEN", "envtok", 1);
  auto r = run({"explain", "17"});
  unsetenv("SLUICE_SERVER");
  unsetenv("SLUICE_TOKEN");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "job 17 waits: quota\n");
  EXPECT_EQ(fake_.last().authorization, "Bearer envtok");
}

TEST_F(ClientCmd, LogsPassesPodAndTail) {
  auto r = run({"logs", "17", "--pod", "1", "--tail-bytes", "100", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "epoch 1 loss 0.5\n");
  EXPECT_EQ(fake_.last().path, "/v1/jobs/17/logs");
  EXPECT_EQ(fake_.last().params.find("pod")->second, "1");
  EXPECT_EQ(fake_.last().params.find("tail_bytes")->second, "100");
}

TEST_F(ClientCmd, LogsFollowsUntilTheJobEnds) {
  auto r = run({"logs", "17", "-f", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "epoch 1 loss 0.5\nepoch 2\n");
  EXPECT_EQ(fake_.last().params.find("offset")->second, "25");  // the end: nothing more
}

TEST_F(ClientCmd, AWordIsNotAJobId) {
  for (const char* cmd : {"cancel", "logs", "explain"}) {
    auto r = run({cmd, "big-out", "--server", fake_.url()});
    EXPECT_EQ(r.code, 1) << cmd;
    EXPECT_EQ(r.err.rfind("error: \"big-out\" is not a job id", 0), 0u) << r.err;
  }
  EXPECT_TRUE(fake_.seen().empty());
}

TEST_F(ClientCmd, CancelByNameCancelsTheMatchingLiveJobs) {
  auto r = run({"cancel", "--name", "bert", "--user", "alice", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled job 17 (bert): cancelled\n");
  const auto seen = fake_.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].params.find("state")->second, "pending,running");
  EXPECT_EQ(seen[0].params.find("user")->second, "alice");
  EXPECT_EQ(seen[1].path, "/v1/jobs/17/cancel");
  r = run({"cancel", "--name", "nobody", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "no live job matches\n");
  EXPECT_EQ(run({"cancel", "--server", fake_.url()}).code, 1);
}

TEST_F(ClientCmd, CancelTriesEveryIdAndExitsOneOnARefusal) {
  auto r = run({"cancel", "5", "404", "6", "--server", fake_.url()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out,
            "cancelled job 5 (bert): cancelled\n"
            "cancelled job 6 (bert): cancelled\n");
  EXPECT_EQ(r.err, "job 404: error: HTTP 404 Not Found: no job 404\n");
}

// Issue 41: a name inside a line is escaped whatever stdout is (here a string stream).
TEST_F(ClientCmd, NamesInALineAreEscaped) {
  auto r = run({"cancel", "66", "--server", fake_.url()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "cancelled job 66 (evil^[]0;pwned^G): cancelled\n");
}

TEST_F(ClientCmd, UnreachableServerIsExitCodeTwo) {
  std::string url;
  {
    FakeServer gone;
    url = gone.url();
  }
  auto r = run({"nodes", "--server", url});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: cannot reach sluice server at " + url +
                       " (is `sluice serve` running? set --server or SLUICE_SERVER)\n");
}

}  // namespace
}  // namespace sluice::cli
