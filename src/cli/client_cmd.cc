// The client commands: submit, run, jobs, queues, nodes, cancel, logs, explain, config. Each talks
// HTTP/JSON to `sluice serve` (docs/api.md) through client_http and prints a table
// (client_views) or, with --json, the server's JSON as it came. Exit codes: 0 done, 1 the server
// refused (its message on stderr) or bad options, 2 the server could not be reached.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/client_common.h"
#include "cli/client_config_files.h"
#include "cli/client_http.h"
#include "cli/client_pty.h"
#include "cli/client_run.h"
#include "cli/client_sbatch.h"
#include "cli/client_squeue.h"
#include "cli/client_views.h"
#include "cli/commands.h"
#include "config/loader.h"

namespace sluice::cli {

namespace {

using nlohmann::json;

// JSON and YAML both reach the server's one parser; the type tells it which error style to use.
std::string content_type_for(const std::string& name, const std::string& text) {
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) return "application/json";
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
    return (c == '{' || c == '[') ? "application/json" : "application/yaml";
  }
  return "application/yaml";
}

}  // namespace

json list_pages(HttpClient http, const std::string& path, size_t want) {
  json out = {{"jobs", json::array()}, {"truncated", false}, {"continue", nullptr}};
  std::string next;
  for (;;) {
    std::string page = path;
    add_query(page, "limit", std::to_string(want - out["jobs"].size()));
    add_query(page, "continue", next);
    json reply = need(http.call_json("GET", page));
    if (reply.contains("jobs") && reply["jobs"].is_array())
      for (auto& j : reply["jobs"]) out["jobs"].push_back(std::move(j));
    out["truncated"] = reply.value("truncated", false);
    out["continue"] = reply.contains("continue") ? reply["continue"] : json(nullptr);
    if (!out["truncated"].get<bool>() || !out["continue"].is_string() || out["jobs"].size() >= want)
      return out;
    next = out["continue"].get<std::string>();
  }
}

namespace {

// The server reads a body as the source "request"; its messages name the file instead.
std::string in_file(const std::string& message, const std::string& file) {
  static const std::string kRequest = "request:";
  return message.rfind(kRequest, 0) == 0 ? file + ":" + message.substr(kRequest.size()) : message;
}

void register_submit(CLI::App& app) {
  auto* cmd = app.add_subcommand("submit", "Submit job documents (sluice Job, Pod, batch/v1 Job)");
  auto c = std::make_shared<Common>();
  auto files = std::make_shared<std::vector<std::string>>();
  cmd->add_option("files", *files, "YAML or JSON files; - reads standard input")->required();
  add_common(cmd, *c, true);
  cmd->callback([c, files] {
    HttpClient http(c->conn);
    json all = {{"jobs", json::array()}};
    // One request per file: a file is all-or-nothing on the server and its line numbers stay
    // the file's own. The first refusal stops the rest.
    for (const auto& f : *files) {
      Source src;
      if (f == "-") {
        src.name = "<stdin>";
        src.text.assign(std::istreambuf_iterator<char>(std::cin), {});
      } else {
        auto read = read_source(f);
        if (!read) fail({1, "error: " + read.error()});
        src = std::move(*read);
      }
      if (src.text.find_first_not_of(" \t\r\n") == std::string::npos)
        fail({1, "error: " + src.name + ": empty, nothing to submit"});
      auto reply = HttpClient(c->conn).call_json("POST", "/v1/jobs", src.text,
                                                 content_type_for(src.name, src.text));
      if (!reply.ok) {
        std::string& m = reply.failure.message;
        for (size_t at = m.find("\n  request:"); at != std::string::npos;
             at = m.find("\n  request:", at + 1))
          m.replace(at + 3, 7, src.name);
        if (files->size() > 1)
          reply.failure.message +=
              "\n  (while submitting " + src.name + "; files before it were submitted)";
        if (c->json && !all["jobs"].empty()) print_json(all);
        fail(reply.failure);
      }
      // The notes `sluice check` gives for the same file (ignored fields, defaults, ...).
      if (reply.value.contains("notes") && reply.value["notes"].is_array())
        for (const auto& n : reply.value["notes"])
          if (n.is_string()) print_err("note: " + in_file(n.get<std::string>(), src.name) + "\n");
      if (c->json) {
        if (reply.value.contains("jobs") && reply.value["jobs"].is_array())
          for (const auto& j : reply.value["jobs"]) all["jobs"].push_back(j);
      } else {
        print_out(submitted_text(reply.value));
      }
    }
    if (c->json) print_json(all);
  });
}

// -n is Slurm's --ntasks; before issue 43 `sluice run -n` was the namespace: say so.
Outcome<int> parse_ntasks(const std::string& v) {
  if (!v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos &&
      std::stoi(v) > 0)
    return Outcome<int>::success(std::stoi(v));
  return Outcome<int>::fail({1, "error: -n/--ntasks is the number of tasks, as Slurm's -n, and \"" +
                                    v +
                                    "\" is not a positive number; the namespace is --namespace"});
}

// sluice run's options of what the job asks for (and --parsable, --wait), in --help's order.
void add_run_shape_options(CLI::App* cmd, RunArgs& a, std::string& ntasks, bool& parsable,
                           bool& wait) {
  cmd->add_option("--queue,-q,-p,--partition", a.queue,
                  "LocalQueue in the job's namespace (default: its LocalQueue \"default\")");
  cmd->add_option("--namespace", a.namespace_, "Namespace (server default: default)");
  cmd->add_option("--gpus", a.gpus, "Whole GPUs per pod");
  cmd->add_option("--gang", a.gang, "Pods in the gang (all start together), each with --gpus")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--nodes,-N", a.nodes,
                  "Slurm's -N: this many pods, each on a node of its own, each with --gpus")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ntasks,-n", ntasks,
                  "Slurm's -n: tasks (a process each); with --nodes split over them, alone a "
                  "pod a task");
  cmd->add_option("--ntasks-per-node", a.ntasks_per_node,
                  "Slurm's --ntasks-per-node: processes a pod (srun starts them)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--parsable", parsable, "Print only the job id (as sbatch --parsable)");
  cmd->add_flag("--wait,-W", wait,
                "Wait for the job as srun does: print pod 0's output as it comes, exit with "
                "the job's status");
  cmd->add_option("--gpu-fraction", a.gpu_fraction, "A share of one GPU: 0.5 or 500m");
  cmd->add_option("--gpu-model", a.gpu_models,
                  "Only these GPU models (comma-separated: H100,A100), in any case")
      ->delimiter(',');
  cmd->add_option("--cpu", a.cpu, "CPU per pod: 4 or 500m");
  cmd->add_option("--memory", a.memory, "Memory per pod: 16Gi");
  cmd->add_option("--priority-class", a.priority_class, "WorkloadPriorityClass name");
  cmd->add_option("--time,-t,--walltime", a.walltime,
                  "Run-time limit and estimate, as Slurm's --time: minutes (90), MM:SS, HH:MM:SS, "
                  "D-HH, D-HH:MM, D-HH:MM:SS; or 90s, 30m, 2h");
  cmd->add_option("--complete-by", a.complete_by,
                  "Deadline: finish by this RFC 3339 time (2026-12-02T18:00:00Z)");
  cmd->add_option("--complete-within", a.complete_within,
                  "Deadline: finish within this long after submission (90m, 2h, 1d)");
}

// sluice run's options of how its pods run: name, directory, environment, job control, kind.
void add_run_process_options(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--name,-J,--job-name", a.name,
                  "Job name (default: from the command, made unique)");
  cmd->add_option("--chdir,-D", a.chdir,
                  "Working directory of the pods (default: the current directory; it must exist "
                  "on the nodes)");
  cmd->add_option("--export", a.export_spec,
                  "Environment the pods get, as Slurm's --export: ALL (default: this shell's, "
                  "less SLUICE_*), NONE, or NAME,NAME=VALUE,... (after ALL: added)");
  // One value per -e: a greedy vector option would swallow `--` and the command after it.
  cmd->add_option("--env,-e", a.env, "KEY=VALUE for the process (repeatable)")
      ->allow_extra_args(false);
  add_job_control(cmd, a);
  cmd->add_flag("--interactive", a.interactive, "Interactive: start now or fail fast");
  cmd->add_flag("--pty", a.pty,
                "Run the command (a shell) under a terminal and attach this one to it, as "
                "srun --pty; exits with its exit status");
  auto* pre = cmd->add_flag("--preemptible", a.preemptible, "May be preempted");
  auto* nopre = cmd->add_flag("--no-preemptible", a.no_preemptible, "Must not be preempted");
  pre->excludes(nopre);
  cmd->add_flag(
      "--no-spot", a.no_spot,
      "Never on a spot node of a NodePool (a reclaim would stop it; docs/autoscaling.md)");
  cmd->add_option("--right-size", a.right_size,
                  "auto: a recurring job (same --name, user and image) may run on the smallest "
                  "GPU or MIG slice its measured peak fits (docs/scheduling.md)")
      ->check(CLI::IsMember({"auto", "off"}));
}

// sluice run, once its options are read: the job submitted, then printed, attached or waited
// for.
void run_command(const Common& c, RunArgs& a, const std::string& ntasks, bool dry_run,
                 bool parsable, bool wait) {
  if (wait && (!a.array.empty() || a.pty))
    fail({1, "error: --wait waits for one job: not with --array (or --pty, which waits)"});
  if (!ntasks.empty()) a.ntasks = need(parse_ntasks(ntasks));
  // The default name's suffix only has to differ between two runs of the same command; the
  // clock's milliseconds in base 36 do that without a random source.
  auto ms = static_cast<unsigned long long>(now_unix_s() * 1000) % (36ULL * 36 * 36 * 36 * 36);
  std::string suffix;
  for (int i = 0; i < 5; ++i, ms /= 36)
    suffix.insert(suffix.begin(), "0123456789abcdefghijklmnopqrstuvwxyz"[ms % 36]);
  a.caller_env = environ;
  std::error_code ec;
  a.cwd = std::filesystem::current_path(ec).string();
  json doc = need(build_run_job(a, suffix));
  if (dry_run) {
    print_json(doc);
    return;
  }
  json reply = need(HttpClient(c.conn).call_json("POST", "/v1/jobs", doc.dump()));
  print_submit_warnings(reply);
  if (a.pty) {  // attached until the pod ends: its exit status is ours
    const auto id = reply["jobs"].at(0).value("id", 0ULL);
    if (const int code = attach_pty(c.conn, id); code != 0) throw ExitStatus{code};
    return;
  }
  if (c.json)
    print_json(reply);
  else if (parsable)
    print_out(std::to_string(reply["jobs"].at(0).value("id", 0ULL)) + "\n");
  else if (wait)  // as srun: the submission on stderr, the job's output on stdout
    print_err(submitted_text(reply));
  else
    print_out(a.array.empty() ? submitted_text(reply) : array_submitted_text(reply));
  if (wait)
    if (const int code = wait_for_job(c, reply["jobs"].at(0).value("id", 0ULL)); code != 0)
      throw ExitStatus{code};
}

void register_run(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "run", "Submit a command line as a job: sluice run --queue Q --gpus N -- CMD ARGS...");
  auto c = std::make_shared<Common>();
  auto a = std::make_shared<RunArgs>();
  auto dry_run = std::make_shared<bool>(false);
  auto parsable = std::make_shared<bool>(false);
  auto wait = std::make_shared<bool>(false);
  auto ntasks = std::make_shared<std::string>();
  add_run_shape_options(cmd, *a, *ntasks, *parsable, *wait);
  add_run_process_options(cmd, *a);
  cmd->add_flag("--dry-run", *dry_run, "Print the Job document instead of submitting it");
  cmd->add_option("command", a->command, "The command and its arguments (after --)")->required();
  add_common(cmd, *c, true);
  cmd->callback([c, a, dry_run, parsable, ntasks, wait] {
    run_command(*c, *a, *ntasks, *dry_run, *parsable, *wait);
  });
}

// A table, or "no jobs" where it would be just the header.
void print_listing(const std::string& text, const char* what) {
  print_out(std::count(text.begin(), text.end(), '\n') <= 1 ? "no " + std::string(what) + "\n"
                                                            : text);
}

void register_listing(CLI::App& app, const char* name, const char* help, const char* path,
                      std::string (*table)(const json&, const ViewOptions&), const char* what) {
  auto* cmd = app.add_subcommand(name, help);
  auto c = std::make_shared<Common>();
  add_common(cmd, *c, true);
  cmd->add_flag("--wide,-w", c->wide, "Do not shorten long cells");
  cmd->callback([cmd, c, path, table, what] {
    if (!cmd->get_subcommands().empty()) return;  // e.g. `nodes reset-credential`: not a listing
    json reply = need(HttpClient(c->conn).call_json("GET", path));
    if (c->json) return print_json(reply);
    print_listing(table(reply, ViewOptions{now_unix_s(), c->wide}), what);
  });
}

void register_jobs(CLI::App& app) {
  auto* cmd = app.add_subcommand("jobs", "List jobs (newest first)");
  auto c = std::make_shared<Common>();
  struct Filters {
    std::string state, queue, ns, user;
    std::vector<std::string> ids;
    int limit = 0;
    bool start = false, me = false, array_tasks = false, no_header = false;
    std::string format;
  };
  auto f = std::make_shared<Filters>();
  cmd->add_option("--state,-s,-t,--states", f->state,
                  "Only these states, comma-separated: pending,running,succeeded,failed,"
                  "cancelled,rejected, or Slurm's PD,R,CD,F,CA (squeue -t)");
  cmd->add_option("--queue,-q,-p,--partition", f->queue, "Only this queue");
  cmd->add_option("--namespace,-n", f->ns, "Only this namespace");
  cmd->add_option("--user,-u", f->user, "Only jobs of this submitter");
  cmd->add_flag("--me", f->me, "Only your own jobs (squeue --me)");
  cmd->add_flag("--array,-r", f->array_tasks,
                "Each pending array task on its own line (by default an array's pending tasks "
                "are one line, 42_[3-99], as squeue shows them)");
  cmd->add_option("--jobs,-j", f->ids, "Only these job ids (comma-separated or repeated)")
      ->delimiter(',');
  cmd->add_option("--limit", f->limit,
                  "At most this many jobs (default 500; fetched a page of 1000 at a time)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--wide,-w", c->wide, "Do not shorten long cells (reasons, node lists)");
  cmd->add_option("--format,-o", f->format,
                  "squeue's output format, e.g. \"%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R\" "
                  "(fields %i %A %j %u %a %P %q %t %T %M %D %N %R %b %V %S %e; docs/cli.md)");
  cmd->add_flag("--noheader", f->no_header, "With --format: no header line (squeue -h)");
  cmd->add_flag("--start", f->start,
                "A START column: each pending job's predicted start (UTC), forecast from the "
                "running jobs' walltimes with nothing else submitted (like squeue --start)");
  add_common(cmd, *c, true);
  cmd->callback([c, f] {
    if (f->me) {
      if (!f->user.empty()) fail({2, "error: --me and --user name the submitter twice"});
      f->user = local_user_name();
    }
    if (auto why = f->format.empty() ? std::nullopt : squeue_check(f->format))
      fail({2, "error: --format: " + *why});
    std::string path = "/v1/jobs";
    if (f->start) add_query(path, "start", "1");
    add_query(path, "state", f->state);
    add_query(path, "queue", f->queue);
    add_query(path, "namespace", f->ns);
    add_query(path, "user", f->user);
    std::string ids;
    for (const auto& text : f->ids) {
      if (!parse_job_id(text)) fail(not_a_job_id(text));
      ids += (ids.empty() ? "" : ",") + text;
    }
    add_query(path, "id", ids);
    json reply = list_pages(HttpClient(c->conn), path, f->limit > 0 ? f->limit : 500);
    if (c->json) {
      print_json(reply);
    } else if (!f->format.empty()) {
      std::fputs(
          squeue_lines(reply.value("jobs", json::array()), f->format, !f->no_header, now_unix_s())
              .c_str(),
          stdout);
    } else {
      print_listing(jobs_table(reply, ViewOptions{now_unix_s(), c->wide, f->start, f->array_tasks}),
                    "jobs");
      // The server stops at the limit: say so rather than let the list look complete.
      if (reply.value("truncated", false) && reply.contains("jobs") && reply["jobs"].is_array())
        std::cerr << "(the newest " << reply["jobs"].size()
                  << " matching jobs; more match: narrow the filters or raise --limit)\n";
    }
  });
}

// `sluice queues`: the LocalQueues the caller may submit to; --cluster-queues: ClusterQueues.
void register_queues(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "queues", "List the LocalQueues you may submit to (--cluster-queues: ClusterQueues)");
  auto c = std::make_shared<Common>();
  auto cluster = std::make_shared<bool>(false);
  add_common(cmd, *c, true);
  cmd->add_flag("--wide,-w", c->wide, "Do not shorten long cells");
  cmd->add_flag("--cluster-queues,-c", *cluster,
                "ClusterQueues: cohort, quota, borrowing, fair share (the administrator's view)");
  cmd->callback([c, cluster] {
    json reply =
        need(HttpClient(c->conn).call_json("GET", *cluster ? "/v1/queues" : "/v1/localqueues"));
    if (c->json) return print_json(reply);
    const ViewOptions o{now_unix_s(), c->wide};
    print_listing(*cluster ? queues_table(reply, o) : local_queues_table(reply, o), "queues");
  });
}

// Cancels one job; false when refused. The failure is printed; *worst keeps the worst code.
bool cancel_one(const Common& c, unsigned long long id, json& all, int* worst) {
  auto reply = HttpClient(c.conn).call_json("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
  if (!reply.ok) {
    print_err("job " + std::to_string(id) + ": " + reply.failure.message + "\n");
    *worst = std::max(*worst, reply.failure.exit_code);
    return false;
  }
  if (c.json) {
    all.push_back(reply.value);
    return true;
  }
  std::string line = "cancelled job " + std::to_string(id);
  if (reply.value.contains("name") && reply.value["name"].is_string())
    line += " (" + printable_text(reply.value["name"].get<std::string>()) + ")";
  if (reply.value.contains("state") && reply.value["state"].is_string())
    line += ": " + printable_text(reply.value["state"].get<std::string>());
  print_out(line + "\n");
  return true;
}

// The ids of the jobs matching scancel-like filters (name, state, user, namespace, queue).
std::vector<unsigned long long> matching_jobs(const Common& c, const std::string& name,
                                              std::string state, const std::string& user,
                                              const std::string& ns, const std::string& queue) {
  std::string path = "/v1/jobs";
  // Only live jobs can be cancelled: the filter defaults to them.
  add_query(path, "state", state.empty() ? "pending,running" : state);
  add_query(path, "user", user);
  add_query(path, "namespace", ns);
  add_query(path, "queue", queue);
  add_query(path, "limit", "100000");
  json reply = need(HttpClient(c.conn).call_json("GET", path));
  std::vector<unsigned long long> ids;
  if (reply.contains("jobs") && reply["jobs"].is_array())
    for (const auto& j : reply["jobs"])
      if (name.empty() || j.value("name", "") == name) ids.push_back(j.value("id", 0ULL));
  return ids;
}

void register_cancel(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "cancel", "Cancel jobs by id, or every live job matching --name/--state/--user (scancel)");
  auto c = std::make_shared<Common>();
  struct Args {
    std::vector<std::string> ids;
    std::string name, state, user, ns, queue;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("ids", a->ids, "Job ids");
  cmd->add_option("--name,-J", a->name, "Every live job of this name");
  cmd->add_option("--state,-s", a->state, "Only jobs in these states (default pending,running)");
  cmd->add_option("--user,-u", a->user, "Only jobs of this submitter");
  cmd->add_option("--namespace,-n", a->ns, "Only jobs of this namespace");
  cmd->add_option("--queue,-q", a->queue, "Only jobs of this queue");
  add_common(cmd, *c, true);
  cmd->callback([c, a] {
    std::vector<unsigned long long> ids;
    for (const auto& text : a->ids) {
      auto id = parse_job_id(text);
      if (!id) fail(not_a_job_id(text));
      ids.push_back(*id);
    }
    const bool filtered = !a->name.empty() || !a->state.empty() || !a->user.empty() ||
                          !a->ns.empty() || !a->queue.empty();
    if (ids.empty() && !filtered)
      fail({1, "error: give job ids, or filters (--name, --state, --user, --namespace, --queue)"});
    if (!ids.empty() && filtered) fail({1, "error: give job ids or filters, not both"});
    if (filtered) {
      ids = matching_jobs(*c, a->name, a->state, a->user, a->ns, a->queue);
      if (ids.empty()) {
        std::cerr << "no live job matches\n";
        if (c->json) print_json(json::array());
        return;
      }
    }
    // Every id is tried; the exit code reports the worst outcome.
    int worst = 0;
    json all = json::array();
    for (auto id : ids)
      if (!cancel_one(*c, id, all, &worst) && worst == 2)
        break;  // the server is gone: the rest would fail too
    if (c->json) print_json(ids.size() == 1 && all.size() == 1 ? all[0] : all);
    if (worst != 0) throw CLI::RuntimeError(worst);
  });
}

void register_explain(CLI::App& app) {
  auto* cmd = app.add_subcommand("explain", "Why a job is where it is, in words");
  auto c = std::make_shared<Common>();
  auto id = std::make_shared<std::string>();
  cmd->add_option("id", *id, "Job id")->required();
  add_common(cmd, *c, true);
  cmd->callback([c, id] {
    auto n = parse_job_id(*id);
    if (!n) fail(not_a_job_id(*id));
    json reply =
        need(HttpClient(c->conn).call_json("GET", "/v1/jobs/" + std::to_string(*n) + "/explain"));
    if (c->json) return print_json(reply);
    std::string text;
    if (reply.contains("explanation") && reply["explanation"].is_string())
      text = reply["explanation"].get<std::string>();
    else
      text = reply.dump(2);  // an unexpected shape: show it rather than nothing
    if (text.empty() || text.back() != '\n') text += "\n";
    print_out(text);
  });
}

// Warnings of an applied configuration, one per line, then what happened.
void print_applied(const json& reply, const std::string& what) {
  if (reply.contains("warnings") && reply["warnings"].is_array())
    for (const auto& w : reply["warnings"])
      if (w.is_string()) print_err("warning: " + w.get<std::string>() + "\n");
  std::cout << what << "\n";
}

void register_config(CLI::App& app) {
  auto* cmd = app.add_subcommand("config", "Show, apply or reload the server's configuration");
  cmd->require_subcommand(1);
  auto c = std::make_shared<Common>();
  auto* get = cmd->add_subcommand("get", "Print the configuration in force (YAML; admin token)");
  add_common(get, *c, false);
  get->callback([c] { print_out(need(HttpClient(c->conn).call("GET", "/v1/config")).body); });
  auto files = std::make_shared<std::vector<std::string>>();
  auto* apply = cmd->add_subcommand(
      "apply", "Replace the configuration with these files, validated first (admin token)");
  apply->add_option("files", *files, "YAML files (all documents of the new configuration)")
      ->required();
  add_common(apply, *c, true);
  apply->callback([c, files] {
    auto joined = read_and_join(*files);
    if (!joined) fail({1, "error: " + joined.error()});
    auto out = HttpClient(c->conn).call_json("PUT", "/v1/config", joined->body, "application/yaml");
    // The server read one body ("request:LINE"); the user wrote files.
    if (!out.ok) out.failure.message = joined->cite(out.failure.message);
    json reply = need(std::move(out));
    if (c->json) return print_json(reply);
    print_applied(reply, "configuration applied");
  });
  auto* reload = cmd->add_subcommand(
      "reload", "Make the server re-read its --config files, as SIGHUP does (admin token)");
  add_common(reload, *c, true);
  reload->callback([c] {
    json reply = need(HttpClient(c->conn).call_json("POST", "/v1/config/reload"));
    if (c->json) return print_json(reply);
    print_applied(reply, "configuration reloaded");
  });
}

// `sluice snapshot` (admin): the live state as the document `sluice plan --config` reads.
void register_snapshot(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "snapshot",
      "Print the live state (configuration, running jobs with their admissions, pending jobs) "
      "as the YAML `sluice plan --config` replays (admin token)");
  auto c = std::make_shared<Common>();
  add_common(cmd, *c, false);
  cmd->callback([c] { print_out(need(HttpClient(c->conn).call("GET", "/v1/state")).body); });
}

// `sluice nodes reset-credential NODE` (admin): docs/agent.md, "Trust model".
void register_node_reset(CLI::App& app) {
  auto* nodes = app.get_subcommand("nodes");
  auto* cmd = nodes->add_subcommand(
      "reset-credential",
      "Release a node whose agent lost its state directory: the next agent to join with "
      "that name (and the join token) becomes the node (admin token)");
  auto c = std::make_shared<Common>();
  auto node = std::make_shared<std::string>();
  cmd->add_option("node", *node, "Node name")->required();
  add_common(cmd, *c, true);
  cmd->callback([c, node] {
    json reply =
        need(HttpClient(c->conn).call_json("POST", "/v1/nodes/" + *node + "/reset-credential"));
    if (c->json) return print_json(reply);
    std::cout << "node " << *node
              << ": credential reset; the next agent to register it with the join token "
                 "becomes the node\n";
  });
}

// `sluice nodes cordon|drain|resume NODE` (admin): docs/cli.md, "sluice nodes".
void register_node_holds(CLI::App& app) {
  auto* nodes = app.get_subcommand("nodes");
  const std::pair<const char*, const char*> verbs[] = {
      {"cordon", "No new pods on the node; running pods run on (admin token)"},
      {"drain",
       "As cordon, and the node shows draining until its pods have ended, then drained "
       "(Slurm's drain; admin token)"},
      {"resume", "Put a cordoned or drained node back into scheduling (admin token)"}};
  for (const auto& [verb, help] : verbs) {
    auto* cmd = nodes->add_subcommand(verb, help);
    auto c = std::make_shared<Common>();
    auto node = std::make_shared<std::string>();
    auto reason = std::make_shared<std::string>();
    cmd->add_option("node", *node, "Node name")->required();
    if (std::string(verb) != "resume")
      cmd->add_option("--reason", *reason, "Why, shown by `sluice nodes`");
    add_common(cmd, *c, true);
    const std::string v = verb;
    cmd->callback([c, node, reason, v] {
      const json body = reason->empty() ? json::object() : json{{"reason", *reason}};
      json reply =
          need(HttpClient(c->conn).call_json("POST", "/v1/nodes/" + *node + "/" + v, body.dump()));
      if (c->json) return print_json(reply);
      std::cout << "node " << *node << ": "
                << (v == "resume"  ? "back in scheduling"
                    : v == "drain" ? "draining: no new pods, running pods run on"
                                   : "cordoned: no new pods")
                << "\n";
    });
  }
}

// `sluice nodes reclaim NODE --notice 30s` (admin): docs/autoscaling.md, "Reclaims".
void register_node_reclaim(CLI::App& app) {
  auto* nodes = app.get_subcommand("nodes");
  auto* cmd = nodes->add_subcommand(
      "reclaim",
      "The node is taken back (a spot reclaim): no new pods, its pods get SIGTERM with the "
      "notice as their grace and go back to their queues; a pool's node is then deleted "
      "(admin token)");
  auto c = std::make_shared<Common>();
  auto node = std::make_shared<std::string>();
  auto notice = std::make_shared<std::string>("30s");
  cmd->add_option("node", *node, "Node name")->required();
  cmd->add_option("--notice", *notice, "How long its pods have (a duration: 30s, 2m)")
      ->capture_default_str();
  add_common(cmd, *c, true);
  cmd->callback([c, node, notice] {
    const json body{{"notice", *notice}};
    json reply =
        need(HttpClient(c->conn).call_json("POST", "/v1/nodes/" + *node + "/reclaim", body.dump()));
    if (c->json) return print_json(reply);
    std::cout << "node " << *node << ": reclaimed; its pods have " << *notice
              << " to stop and go back to their queues\n";
  });
}

}  // namespace

void register_client(CLI::App& app) {
  register_submit(app);
  register_run(app);
  register_jobs(app);
  register_queues(app);
  register_listing(app, "nodes", "List nodes: readiness, GPUs, allocation", "/v1/nodes",
                   nodes_table, "nodes");
  register_node_reset(app);
  register_node_holds(app);
  register_node_reclaim(app);
  register_cancel(app);
  register_logs(app);
  register_explain(app);
  register_sbatch(app);
  register_jobctl(app);
  register_config(app);
  register_snapshot(app);
}

}  // namespace sluice::cli
