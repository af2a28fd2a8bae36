#include "cli/client_sbatch.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace sluice::cli {

namespace {

// Shell-like words of one line: whitespace separates, '...' and "..." keep their contents.
std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) out.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;  // a comment after the options
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(word);
  return out;
}

bool read_count(const std::string& v, int* out) {
  if (v.empty() || v.size() > 6) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::stoi(v);
  return *out > 0;
}

// Slurm's --mem: a number with an optional K/M/G/T suffix, megabytes without one.
std::string slurm_memory(const std::string& v) {
  if (v.empty()) return {};
  size_t digits = 0;
  while (digits < v.size() && std::isdigit(static_cast<unsigned char>(v[digits]))) ++digits;
  if (digits == 0 || digits > 9) return {};
  const std::string num = v.substr(0, digits);
  std::string unit = v.substr(digits);
  if (unit == "B" || unit == "b") unit = unit.substr(1);
  static const std::map<std::string, std::string> kUnits = {{"", "Mi"},  {"K", "Ki"}, {"k", "Ki"},
                                                            {"M", "Mi"}, {"m", "Mi"}, {"G", "Gi"},
                                                            {"g", "Gi"}, {"T", "Ti"}, {"t", "Ti"}};
  auto it = kUnits.find(unit);
  return it == kUnits.end() ? std::string() : num + it->second;
}

// Options that take a value, by every name Slurm gives them; the value is the key's meaning.
const std::map<std::string, std::string>& value_options() {
  static const std::map<std::string, std::string> k = {{"-J", "job-name"},
                                                       {"--job-name", "job-name"},
                                                       {"-p", "partition"},
                                                       {"--partition", "partition"},
                                                       {"-G", "gpus"},
                                                       {"--gpus", "gpus"},
                                                       {"--gpus-per-node", "gpus-per-node"},
                                                       {"--gpus-per-task", "gpus-per-task"},
                                                       {"--gres", "gres"},
                                                       {"-N", "nodes"},
                                                       {"--nodes", "nodes"},
                                                       {"-n", "ntasks"},
                                                       {"--ntasks", "ntasks"},
                                                       {"-c", "cpus-per-task"},
                                                       {"--cpus-per-task", "cpus-per-task"},
                                                       {"--mem", "mem"},
                                                       {"-t", "time"},
                                                       {"--time", "time"},
                                                       {"-a", "array"},
                                                       {"--array", "array"},
                                                       {"-d", "dependency"},
                                                       {"--dependency", "dependency"},
                                                       {"-o", "output"},
                                                       {"--output", "output"},
                                                       {"-e", "error"},
                                                       {"--error", "error"},
                                                       {"-D", "chdir"},
                                                       {"--chdir", "chdir"},
                                                       {"--export", "export"},
                                                       {"-q", "qos"},
                                                       {"--qos", "qos"},
                                                       {"-A", "account"},
                                                       {"--account", "account"},
                                                       {"--mail-type", "ignored"},
                                                       {"--mail-user", "ignored"},
                                                       {"--ntasks-per-node", "ntasks-per-node"},
                                                       {"-C", "constraint"},
                                                       {"--constraint", "constraint"},
                                                       {"--comment", "ignored"},
                                                       {"--open-mode", "ignored"}};
  return k;
}

std::string apply_one(const std::string& key, const std::string& v, SbatchArgs& a,
                      const std::string& opt) {
  RunArgs& r = a.run;
  auto count = [&](int* out) {
    return read_count(v, out) ? std::string()
                              : opt + " " + v + ": expected a positive whole number";
  };
  if (key == "job-name")
    r.name = v;
  else if (key == "partition")
    r.queue = v;
  else if (key == "gpus" || key == "gpus-per-node" || key == "gpus-per-task") {
    // "-G 4" or "--gpus=h100:4": a type names the GPU model (spec.gpuModels).
    int* out = key == "gpus"            ? &a.gpus_total
               : key == "gpus-per-node" ? &a.gpus_per_node
                                        : &a.gpus_per_task;
    const auto colon = v.rfind(':');
    if (!read_count(colon == std::string::npos ? v : v.substr(colon + 1), out))
      return opt + " " + v + ": expected a GPU count (4, or type:4)";
    if (colon != std::string::npos) r.gpu_models = {v.substr(0, colon)};
  } else if (key == "gres") {
    // --gres=gpu:2 or gpu:h100:2 (per node).
    if (v.rfind("gpu", 0) != 0) return opt + " " + v + ": only gpu:N is understood";
    const auto colon = v.rfind(':');
    if (colon == std::string::npos)
      a.gpus_per_node = 1;
    else if (!read_count(v.substr(colon + 1), &a.gpus_per_node))
      return opt + " " + v + ": expected gpu:N";
    const auto first = v.find(':');
    if (first != std::string::npos && first != colon)
      r.gpu_models = {v.substr(first + 1, colon - first - 1)};
  } else if (key == "ntasks-per-node") {
    return count(&a.ntasks_per_node);
  } else if (key == "nodes") {
    // "-N 2" or "-N 2-4": sluice starts the minimum.
    if (!read_count(v.substr(0, v.find('-')), &a.nodes))
      return opt + " " + v + ": expected a node count (2, or 2-4)";
  } else if (key == "ntasks") {
    return count(&a.ntasks);
  } else if (key == "cpus-per-task") {
    if (auto why = count(&a.cpus_per_task); !why.empty()) return why;
    r.cpu = std::to_string(a.cpus_per_task);
  } else if (key == "mem") {
    r.memory = slurm_memory(v);
    if (r.memory.empty()) return opt + " " + v + ": expected a size (16G, 500M, 16000)";
  } else if (key == "time")
    r.walltime = v;
  else if (key == "array")
    r.array = v;
  else if (key == "dependency")
    r.dependency = v;
  else if (key == "output")
    r.output = v;
  else if (key == "error")
    r.error = v;
  else if (key == "chdir")
    r.chdir = v;
  else if (key == "export")
    r.export_spec = v;
  else
    a.notes.push_back(opt + " " + v + " is ignored (no sluice equivalent)");
  return {};
}

}  // namespace

std::vector<std::string> sbatch_words(const std::string& script) {
  std::vector<std::string> words;
  size_t at = 0;
  bool first = true;
  while (at < script.size()) {  // bounded: the script's lines
    size_t nl = script.find('\n', at);
    if (nl == std::string::npos) nl = script.size();
    std::string line = script.substr(at, nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (first && line.rfind("#!", 0) == 0) {
      first = false;
      continue;
    }
    first = false;
    if (start == std::string::npos) continue;
    if (line[start] != '#') break;  // the first command ends the options, as in sbatch
    if (line.compare(start, 7, "#SBATCH") != 0) continue;
    for (auto& w : split_words(line.substr(start + 7))) words.push_back(std::move(w));
  }
  return words;
}

std::string apply_sbatch_options(const std::vector<std::string>& words, SbatchArgs& a,
                                 const std::string& where) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string opt = words[i], value;
    bool has_value = false;
    if (opt.rfind("--", 0) == 0) {
      if (auto eq = opt.find('='); eq != std::string::npos) {
        value = opt.substr(eq + 1);
        opt = opt.substr(0, eq);
        has_value = true;
      }
    } else if (opt.size() > 2 && opt[0] == '-') {  // -N2, -oout.txt
      value = opt.substr(2);
      opt = opt.substr(0, 2);
      has_value = true;
    }
    if (opt == "-H" || opt == "--hold") {
      a.run.hold = true;
      continue;
    }
    if (opt == "--parsable") {
      a.parsable = true;
      continue;
    }
    if (opt == "-Q" || opt == "--quiet") {
      a.quiet = true;
      continue;
    }
    if (opt == "-W" || opt == "--wait") {
      a.wait = true;
      continue;
    }
    if (opt == "--wrap") {
      if (!has_value) {
        if (i + 1 == words.size()) return where + ": --wrap needs a command";
        value = words[++i];
      }
      a.wrap = value;
      continue;
    }
    if (opt == "--exclusive" || opt == "--requeue" || opt == "--no-requeue") {
      a.notes.push_back(opt + " is ignored (no sluice equivalent)");
      continue;
    }
    auto it = value_options().find(opt);
    if (it == value_options().end())
      return where + ": " + words[i] + " is not an sbatch option sluice knows";
    if (!has_value) {
      if (i + 1 == words.size()) return where + ": " + opt + " needs a value";
      value = words[++i];
    }
    if (auto why = apply_one(it->second, value, a, opt); !why.empty()) return where + ": " + why;
  }
  return {};
}

bool sbatch_takes_value(const std::string& opt) {
  return opt == "--wrap" || value_options().count(opt) > 0;
}

std::string sbatch_options_text() {
  // Meanings apply_one reads past with a note (see its last branch).
  static const std::set<std::string> kIgnored = {"ignored", "qos", "account", "constraint"};
  std::map<std::string, std::vector<std::string>> names;  // meaning -> its option names
  for (const auto& [opt, key] : value_options()) names[key].push_back(opt);
  std::vector<std::string> used, ignored = {"--exclusive", "--requeue", "--no-requeue"};
  for (auto& [key, opts] : names) {
    std::sort(opts.begin(), opts.end(), [](const std::string& x, const std::string& y) {
      return x.size() != y.size() ? x.size() < y.size() : x < y;  // -N before --nodes
    });
    if (key == "ignored") {  // distinct options (--mail-type, --comment), not one's names
      ignored.insert(ignored.end(), opts.begin(), opts.end());
      continue;
    }
    std::string both;
    for (const auto& o : opts) both += (both.empty() ? "" : "/") + o;
    (kIgnored.count(key) ? ignored : used).push_back(both + (kIgnored.count(key) ? "" : " V"));
  }
  used.push_back("--wrap CMD");
  auto lines = [](const std::vector<std::string>& items) {  // ", "-joined, under 96 columns
    std::string out = "  ", line;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string item = items[i] + (i + 1 < items.size() ? "," : "");
      if (!line.empty() && line.size() + 1 + item.size() > 94) {
        out += line + "\n  ";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + item;
    }
    return out + line + "\n";
  };
  return "Slurm options read (in #SBATCH lines or before the script; docs/cli.md):\n" +
         lines(used) + "Flags: -H/--hold, --parsable, -Q/--quiet, -W/--wait\nRead and ignored:\n" +
         lines(ignored);
}

std::string wrap_script(const std::string& command) {
  return "#!/bin/sh\n" + command + "\n";
}

std::string finish_sbatch(SbatchArgs& a, const std::string& script_path,
                          const std::string& script_text, const std::vector<std::string>& argv) {
  RunArgs& r = a.run;
  // 1. The gang: one pod per node, each with its node's tasks (-N, --ntasks-per-node), else one
  //    pod per task (-n alone, on any nodes).
  const TaskLayout layout = task_layout(a.nodes, a.ntasks, a.ntasks_per_node);
  if (!layout.error.empty()) return layout.error;
  apply_task_layout(layout, r);
  const int per_node = layout.per_pod;
  if (a.cpus_per_task > 0) r.cpu = std::to_string(a.cpus_per_task * per_node);
  // 2. GPUs per pod: per node, per task (x the tasks a pod runs), or the job's total split.
  if (a.gpus_per_node > 0) {
    r.gpus = a.gpus_per_node;
  } else if (a.gpus_per_task > 0) {
    r.gpus = a.gpus_per_task * per_node;
  } else if (a.gpus_total > 0) {
    if (a.gpus_total % r.gang != 0)
      return "--gpus " + std::to_string(a.gpus_total) + " does not split evenly over " +
             std::to_string(r.gang) + " pods (give --gpus-per-node)";
    r.gpus = a.gpus_total / r.gang;
  }
  if (r.gpus <= 0 && r.cpu.empty() && r.memory.empty()) r.cpu = "1";  // sbatch's default: a CPU
  // 3. The script's text, run by its own interpreter: the nodes need not have the file.
  std::string interp = "/bin/sh";
  std::string interp_arg;
  if (script_text.rfind("#!", 0) == 0) {
    const std::string first = script_text.substr(2, script_text.find('\n') - 2);
    std::vector<std::string> w = split_words(first);
    if (!w.empty()) interp = w[0];
    if (w.size() > 1) interp_arg = w[1];
  }
  r.command = {};
  if (r.gang > 1) r.command = {"srun", "--batch", "--"};  // the script on the first pod only
  r.command.push_back(interp);
  if (!interp_arg.empty()) r.command.push_back(interp_arg);
  const auto slash = script_path.find_last_of('/');
  const std::string base = slash == std::string::npos ? script_path : script_path.substr(slash + 1);
  r.command.insert(r.command.end(), {"-c", script_text, base});
  r.command.insert(r.command.end(), argv.begin(), argv.end());
  if (r.name.empty()) r.name = base;
  return {};
}

void add_job_control(CLI::App* cmd, RunArgs& a) {
  cmd->add_option("--dependency,-d", a.dependency,
                  "Start after other jobs, as Slurm's: afterok:ID[:ID...], afterany:, "
                  "afternotok:, after:, singleton; parts joined by ','");
  cmd->add_flag("--hold,-H", a.hold, "Submit held: it waits until `sluice release ID`");
  cmd->add_option("--array,-a", a.array,
                  "A job array: 0-99, 1,3,5-7, 0-15:4, with %N at most N tasks at once");
  cmd->add_option("--output,-o", a.output,
                  "Write stdout (and stderr, without --error) to this file in the job's "
                  "directory: %j job id, %A array id, %a task, %x name, %u user");
  cmd->add_option("--error", a.error, "Write stderr to this file (patterns as --output)");
}

}  // namespace sluice::cli
