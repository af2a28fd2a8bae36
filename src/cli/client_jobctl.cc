// Slurm's job control and accounting on the command line (docs/cli.md): sbatch, hold,
// release, requeue, history (sacct) and usage (GPU-hours per namespace or user per period).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/client_common.h"
#include "cli/client_pty.h"
#include "cli/client_sbatch.h"
#include "cli/client_table.h"
#include "cli/client_views.h"
#include "config/loader.h"

namespace sluice::cli {

namespace {

using nlohmann::json;

std::string text_of(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "-";
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

std::string number_text(double v, int decimals) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(decimals);
  o << v;
  return o.str();
}

// A time of a history row in UTC, "-" where there is none (never started, not ended).
std::string row_time(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? utc_time_text(j[key].get<double>()) : "-";
}

// ID NAME USER NAMESPACE QUEUE STATE START END ELAPSED GPUS GPU-HOURS EXIT PREEMPTED
std::string history_table(const json& reply) {
  Table t({{"ID"},
           {"NAME", 30},
           {"USER"},
           {"NAMESPACE"},
           {"QUEUE"},
           {"STATE"},
           {"START"},
           {"END"},
           {"ELAPSED", 0, true},
           {"GPUS", 0, true},
           {"GPU-HOURS", 0, true},
           {"EXIT", 0, true},
           {"PREEMPTED", 0, true}});
  for (const auto& j : reply.value("jobs", json::array())) {
    std::string id = text_of(j, "id");
    if (j.contains("array_task") && j["array_task"].is_number())
      id += " (" + text_of(j, "array_job") + "_" + text_of(j, "array_task") + ")";
    const bool timeout = j.value("timed_out", false);  // Slurm's TIMEOUT
    t.add_row({id, text_of(j, "name"), text_of(j, "user"), text_of(j, "namespace"),
               text_of(j, "queue"), timeout ? "timeout" : text_of(j, "state"),
               row_time(j, "start_time"), row_time(j, "end_time"),
               format_duration(j.value("elapsed_s", 0.0)), number_text(j.value("gpus", 0.0), 1),
               number_text(j.value("gpu_hours", 0.0), 3), text_of(j, "exit_code"),
               text_of(j, "preemptions")});
  }
  return t.render();
}

std::string usage_table(const json& reply) {
  const std::string by = reply.value("by", "namespace");
  Table t({{"PERIOD"},
           {by == "user" ? "USER" : "NAMESPACE"},
           {"GPU-HOURS", 0, true},
           {"JOBS", 0, true}});
  for (const auto& u : reply.value("usage", json::array()))
    t.add_row({text_of(u, "period"), text_of(u, by.c_str()),
               number_text(u.value("gpu_hours", 0.0), 3), text_of(u, "jobs")});
  return t.render();
}

// The history's filters, shared by `history` and `usage`.
struct HistoryFilters {
  std::string user, ns, queue, state, since, until, name;
  int limit = 0;
};

void add_history_filters(CLI::App* cmd, HistoryFilters& f) {
  cmd->add_option("--user,-u", f.user, "Only jobs of this submitter");
  cmd->add_option("--namespace,-n", f.ns, "Only this namespace");
  cmd->add_option("--queue,-q", f.queue, "Only this LocalQueue");
  cmd->add_option("--state,-s", f.state, "Only these states, comma-separated");
  cmd->add_option("--name,-J", f.name, "Only jobs of this name");
  cmd->add_option("--since,-S", f.since,
                  "Jobs that lived at or after this time: unix seconds or a UTC date "
                  "(2026-12-01, 2026-12-01T10:00)");
  cmd->add_option("--until,-E", f.until, "Jobs that lived at or before this time");
}

std::string history_path(const char* base, const HistoryFilters& f) {
  std::string path = base;
  add_query(path, "user", f.user);
  add_query(path, "namespace", f.ns);
  add_query(path, "queue", f.queue);
  add_query(path, "state", f.state);
  add_query(path, "name", f.name);
  add_query(path, "since", f.since);
  add_query(path, "until", f.until);
  if (f.limit > 0) add_query(path, "limit", std::to_string(f.limit));
  return path;
}

void register_history(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "history", "Jobs past and present, from the server's event log (Slurm's sacct)");
  auto c = std::make_shared<Common>();
  auto f = std::make_shared<HistoryFilters>();
  add_history_filters(cmd, *f);
  cmd->add_option("--limit", f->limit, "At most this many jobs (server default 1000)")
      ->check(CLI::PositiveNumber);
  add_common(cmd, *c, true);
  cmd->callback([c, f] {
    json reply = need(HttpClient(c->conn).call_json("GET", history_path("/v1/history", *f)));
    if (c->json) return print_json(reply);
    const std::string text = history_table(reply);
    print_out(std::count(text.begin(), text.end(), '\n') <= 1 ? "no jobs\n" : text);
    if (reply.value("truncated", false))
      std::cerr << "(the newest " << reply["jobs"].size()
                << " matching jobs; more match: narrow the filters or raise --limit)\n";
  });

  auto* usage = app.add_subcommand(
      "usage", "GPU-hours per namespace or user per day, week or month (chargeback)");
  auto uc = std::make_shared<Common>();
  auto uf = std::make_shared<HistoryFilters>();
  auto period = std::make_shared<std::string>("month");
  auto by = std::make_shared<std::string>("namespace");
  add_history_filters(usage, *uf);
  usage->add_option("--period", *period, "day, week (from Monday), month or all (UTC)")
      ->check(CLI::IsMember({"day", "week", "month", "all"}));
  usage->add_option("--by", *by, "namespace or user")->check(CLI::IsMember({"namespace", "user"}));
  add_common(usage, *uc, true);
  usage->callback([uc, uf, period, by] {
    std::string path = history_path("/v1/usage", *uf);
    add_query(path, "period", *period);
    add_query(path, "by", *by);
    json reply = need(HttpClient(uc->conn).call_json("GET", path));
    if (uc->json) return print_json(reply);
    const std::string text = usage_table(reply);
    print_out(std::count(text.begin(), text.end(), '\n') <= 1 ? "no usage\n" : text);
  });
}

// `sluice hold|release|requeue ID...`: each id is tried; exit 1 if any was refused.
void register_verbs(CLI::App& app) {
  const std::pair<const char*, const char*> verbs[] = {
      {"hold", "Keep pending jobs from starting until `sluice release` (scontrol hold)"},
      {"release", "Let held jobs start (scontrol release)"},
      {"requeue",
       "Queue jobs again: a running one is stopped first, an ended one runs again (scontrol "
       "requeue; --hold: requeuehold)"}};
  for (const auto& [verb, help] : verbs) {
    auto* cmd = app.add_subcommand(verb, help);
    auto c = std::make_shared<Common>();
    auto ids = std::make_shared<std::vector<std::string>>();
    auto hold = std::make_shared<bool>(false);
    cmd->add_option("ids", *ids, "Job ids")->required();
    if (std::string(verb) == "requeue")
      cmd->add_flag("--hold,-H", *hold, "Keep it held once requeued");
    add_common(cmd, *c, true);
    const std::string v = verb;
    cmd->callback([c, ids, hold, v] {
      int worst = 0;
      json all = json::array();
      for (const auto& text : *ids) {
        auto id = parse_job_id(text);
        if (!id) fail(not_a_job_id(text));
        std::string path = "/v1/jobs/" + std::to_string(*id) + "/" + v;
        if (*hold) path += "?hold=1";
        auto reply = HttpClient(c->conn).call_json("POST", path);
        if (!reply.ok) {
          print_err("job " + std::to_string(*id) + ": " + reply.failure.message + "\n");
          worst = std::max(worst, reply.failure.exit_code);
          if (worst == 2) break;
          continue;
        }
        if (c->json) {
          all.push_back(reply.value);
          continue;
        }
        const json& j = reply.value;
        print_out("job " + std::to_string(*id) + " (" + printable_text(j.value("name", "")) +
                  "): " +
                  (v == "hold"      ? "held"
                   : v == "release" ? "released"
                                    : std::string("requeued") + (*hold ? " and held" : "")) +
                  "; now " + printable_text(j.value("state", "?")) + "\n");
      }
      if (c->json) print_json(all.size() == 1 ? all[0] : all);
      if (worst != 0) throw CLI::RuntimeError(worst);
    });
  }
}

// The words before the script are sbatch's options (a value may be the next word); the first
// other word is the script, the rest its arguments.
void split_sbatch_argv(const std::vector<std::string>& words, std::vector<std::string>* options,
                       std::string* script, std::vector<std::string>* args) {
  // (--wrap takes a value: "--wrap CMD" and "--wrap=CMD" both stay options.)
  size_t i = 0;
  for (; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.empty() || w[0] != '-' || w == "-") break;
    options->push_back(w);
    const bool attached = w.find('=') != std::string::npos || (w[1] != '-' && w.size() > 2);
    if (!attached && sbatch_takes_value(w) && i + 1 < words.size()) options->push_back(words[++i]);
  }
  if (i < words.size()) *script = words[i++];
  args->assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
}

// The batch script: the file named, else `--wrap`'s command, else standard input when it is not
// a terminal (`sbatch < job.sh`, `echo ... | sbatch`), as Slurm reads them.
Result<Source> sbatch_script(const std::vector<std::string>& options, const std::string& path) {
  if (!path.empty()) return read_source(path);
  for (size_t i = 0; i < options.size(); ++i) {
    const std::string& o = options[i];
    if (o.rfind("--wrap=", 0) == 0) return Source{"wrap", wrap_script(o.substr(7))};
    if (o == "--wrap" && i + 1 < options.size()) return Source{"wrap", wrap_script(options[i + 1])};
  }
  if (!::isatty(STDIN_FILENO)) {
    std::string text(std::istreambuf_iterator<char>(std::cin), {});
    if (!text.empty()) return Source{"sbatch", std::move(text)};  // Slurm names it so
  }
  return Error{
      "sluice sbatch needs a script: a file (sluice sbatch job.sh), --wrap \"CMD\", or "
      "the script on standard input"};
}

}  // namespace

std::string array_submitted_text(const json& reply) {
  const json jobs = reply.value("jobs", json::array());
  if (jobs.size() < 2) return submitted_text(reply);
  return "submitted job array " + text_of(jobs.front(), "id") + " (" +
         printable_text(text_of(jobs.front(), "name")) + ", " + std::to_string(jobs.size()) +
         " tasks: jobs " + text_of(jobs.front(), "id") + "-" + text_of(jobs.back(), "id") +
         ") to queue " +
         printable_text(text_of(jobs.front(),
                                jobs.front().contains("local_queue") ? "local_queue" : "queue")) +
         "\n";
}

void register_sbatch(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sbatch",
      "Submit a Slurm batch script: its #SBATCH lines (and sbatch options before it) become a "
      "sluice job: sluice sbatch [OPTIONS] script.sh [ARGS...]");
  auto c = std::make_shared<Common>();
  auto dry_run = std::make_shared<bool>(false);
  auto ns = std::make_shared<std::string>();
  cmd->add_flag("--dry-run", *dry_run, "Print the Job document instead of submitting it");
  cmd->add_option("--namespace", *ns, "Namespace (server default: default)");
  add_common(cmd, *c, true);
  cmd->allow_extras();
  cmd->prefix_command();
  cmd->footer(sbatch_options_text());
  cmd->callback([cmd, c, dry_run, ns] {
    std::vector<std::string> options, args;
    std::string script;
    split_sbatch_argv(cmd->remaining(), &options, &script, &args);
    // A wrong option is named before the script is looked for (its value could be taken for it).
    SbatchArgs probe;
    if (auto why = apply_sbatch_options(options, probe, "the command line"); !why.empty())
      fail({1, "error: " + why});
    auto src = sbatch_script(options, script);
    if (!src) fail({1, "error: " + src.error()});
    script = src->name;
    SbatchArgs a;
    a.run.namespace_ = *ns;
    // The script's lines first, then the command line's options, which win (as in Slurm).
    std::string why = apply_sbatch_options(sbatch_words(src->text), a, script);
    if (why.empty()) why = apply_sbatch_options(options, a, "the command line");
    if (why.empty()) why = finish_sbatch(a, script, src->text, args);
    if (!why.empty()) fail({1, "error: " + why});
    for (const auto& n : a.notes) print_err("note: " + n + "\n");
    a.run.caller_env = environ;
    std::error_code ec;
    a.run.cwd = std::filesystem::current_path(ec).string();
    json doc = need(build_run_job(a.run, ""));
    if (*dry_run) return print_json(doc);
    json reply = need(HttpClient(c->conn).call_json("POST", "/v1/jobs", doc.dump()));
    print_submit_warnings(reply);
    if (c->json)
      print_json(reply);
    else if (a.parsable)  // the id alone (an array's first task's), as Slurm's "jobid[;cluster]"
      print_out(text_of(reply.value("jobs", json::array()).at(0), "id") + "\n");
    else if (!a.quiet)
      print_out(array_submitted_text(reply));
    // -W: until the job ends, its status ours (an array's first task's).
    if (a.wait)
      if (const int code = wait_for_job(*c, reply["jobs"].at(0).value("id", 0ULL)); code != 0)
        throw ExitStatus{code};
  });
}

void register_jobctl(CLI::App& app) {
  register_verbs(app);
  register_history(app);
}

}  // namespace sluice::cli
