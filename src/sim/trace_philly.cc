#include "sim/trace_philly.h"

#include <map>
#include <sstream>

#include "sim/csv_text.h"
#include "sim/parse_num.h"

namespace sluice::sim {

TraceOutput read_philly(const std::string& name, const std::string& text,
                        const PhillyOptions& options) {
  TraceOutput out;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    out.errors.push_back(name + ":1: empty file (expected a header line)");
    return out;
  }
  // 1. Header: find the columns by name.
  const auto header = split_csv(line);
  std::map<std::string, int> col;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(header[i], static_cast<int>(i));
  const char* kRequired[] = {"job_id", "user", "num_gpu", "submit_time", "duration"};
  std::string missing;
  for (const char* c : kRequired)
    if (!col.count(c)) missing += std::string(missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    out.errors.push_back(name + ":1: header lacks column(s) " + missing);
    return out;
  }
  const int c_id = col["job_id"], c_user = col["user"], c_gpu = col["num_gpu"],
            c_submit = col["submit_time"], c_dur = col["duration"];
  const int c_be = col.count("best_effort") ? col["best_effort"] : -1;
  const int c_expect = col.count("expect_time_list") ? col["expect_time_list"] : -1;

  // 2. Rows: one job each; a bad row is reported and dropped.
  int64_t line_no = 1;
  JobId next_id = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    ++out.rows;
    const std::string where = name + ":" + std::to_string(line_no);
    const auto f = split_csv(line);
    if (f.size() != header.size()) {
      out.errors.push_back(where + ": expected " + std::to_string(header.size()) +
                           " columns, got " + std::to_string(f.size()));
      continue;
    }
    const auto gpus = parse_int(f[c_gpu]);
    const auto submit = parse_seconds_ns(f[c_submit]);
    const auto dur = parse_seconds_ns(f[c_dur]);
    std::optional<int64_t> be = c_be >= 0 ? parse_int(f[c_be]) : std::optional<int64_t>(0);
    // Chronus: a strict job's expected completion time, seconds after its submission (a
    // best-effort row repeats its submit time there: no deadline).
    const auto expect = c_expect >= 0 ? parse_seconds_ns(f[c_expect]) : std::optional<TimeNs>(0);
    std::string bad;
    if (f[c_user].empty())
      bad = "user: empty";
    else if (!gpus)
      bad = "num_gpu: '" + f[c_gpu] + "' is not an integer";
    else if (*gpus <= 0 || *gpus > 100000)
      bad = "num_gpu: " + f[c_gpu] + " is out of range (a job needs 1 to 100000 GPUs)";
    else if (!submit)
      bad = "submit_time: '" + f[c_submit] + "' is not a number of seconds";
    else if (*submit < 0)
      bad = "submit_time: " + f[c_submit] + " is negative";
    else if (!dur)
      bad = "duration: '" + f[c_dur] + "' is not a number of seconds";
    else if (*dur < 0)
      bad = "duration: " + f[c_dur] + " is negative";
    else if (!be || (*be != 0 && *be != 1))
      bad = "best_effort: '" + f[c_be] + "' is not 0 or 1";
    else if (!expect || *expect < 0)
      bad = "expect_time_list: '" + f[c_expect] + "' is not a non-negative number of seconds";
    if (!bad.empty()) {
      out.errors.push_back(where + ": " + bad);
      continue;
    }
    TraceJob tj;
    tj.where = where;
    Job& j = tj.job;
    j.id = next_id++;
    j.name = "philly-" + f[c_id];
    j.namespace_ = options.namespace_;
    j.queue = f[c_user];
    j.priority_class = *be ? options.best_effort_class : options.strict_class;
    j.preemptible = *be != 0;
    j.submit_ns = *submit;
    j.walltime_ns = *dur;
    tj.duration_ns = *dur;
    if (*be == 0 && *expect > 0) tj.complete_by_ns = *submit + *expect;
    set_gpu_shape(j, static_cast<int32_t>(*gpus), options.gpus_per_node);
    out.jobs.push_back(std::move(tj));
  }
  return out;
}

}  // namespace sluice::sim
