#include "sim/trace_philly.h"

#include <map>
#include <sstream>

#include "sim/csv_text.h"
#include "sim/parse_num.h"

namespace sluice::sim {

namespace {

// Chronus writes at most 4 steps; the bound keeps a row's utility small (house rule 11).
constexpr size_t kMaxValueSteps = 16;
constexpr int64_t kMaxValue = 1'000'000'000;

// Column indexes by header name; -1 when the optional column is absent.
struct Columns {
  int id = -1, user = -1, gpus = -1, submit = -1, duration = -1;
  int best_effort = -1, times = -1, values = -1, model = -1;
};

// Finds the columns; returns the required ones that are missing ("" when none).
std::string find_columns(const std::vector<std::string>& header, Columns* c) {
  std::map<std::string, int> col;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(header[i], static_cast<int>(i));
  const std::pair<const char*, int*> kRequired[] = {{"job_id", &c->id},
                                                    {"user", &c->user},
                                                    {"num_gpu", &c->gpus},
                                                    {"submit_time", &c->submit},
                                                    {"duration", &c->duration}};
  std::string missing;
  for (const auto& [name, index] : kRequired) {
    const auto it = col.find(name);
    if (it == col.end())
      missing += std::string(missing.empty() ? "" : ", ") + name;
    else
      *index = it->second;
  }
  const std::pair<const char*, int*> kOptional[] = {{"best_effort", &c->best_effort},
                                                    {"expect_time_list", &c->times},
                                                    {"expect_value_list", &c->values},
                                                    {"model_name", &c->model}};
  for (const auto& [name, index] : kOptional)
    if (const auto it = col.find(name); it != col.end()) *index = it->second;
  return missing;
}

// The items of a '-'-separated list, or why not: an empty item ("159--189", or "-5": a '-'
// always separates, so a negative number cannot be written).
std::string list_items(const char* column, const std::string& text,
                       std::vector<std::string>* items) {
  *items = text.empty() ? std::vector<std::string>{} : split_fields(text, '-');
  if (items->size() > kMaxValueSteps)
    return std::string(column) + ": '" + text + "' has more than " +
           std::to_string(kMaxValueSteps) + " items";
  for (size_t i = 0; i < items->size(); ++i)
    if ((*items)[i].empty())
      return std::string(column) + ": '" + text + "': item " + std::to_string(i + 1) +
             " is empty (items are non-negative numbers separated by '-')";
  return "";
}

// Chronus's `expect_time_list` and `expect_value_list` of one row (either may be "": empty or
// absent) as utility steps; "" when valid, else what is wrong. The shapes (docs/simulator.md):
//   times "" and values ""     no utility
//   times "T", values "" / "V" one step: by T seconds after submission, value V (1 if absent)
//   times "T1-..-Tn", values "V1-..-Vn" (n <= 16): n steps, T1 > 0, times non-decreasing,
//                              values non-increasing (completing later never earns more)
// Times are seconds (decimals allowed), values whole numbers in [0, 1e9].
std::string parse_utility(const std::string& times, const std::string& values,
                          std::vector<ValueStep>* out) {
  std::vector<std::string> t, v;
  if (std::string bad = list_items("expect_time_list", times, &t); !bad.empty()) return bad;
  if (std::string bad = list_items("expect_value_list", values, &v); !bad.empty()) return bad;
  if (v.size() != t.size() && !(v.empty() && t.size() == 1))
    return "expect_time_list has " + std::to_string(t.size()) + " item(s) but expect_value_list " +
           std::to_string(v.size()) + " ('" + times + "' / '" + values + "')";
  out->clear();
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string n = std::to_string(i + 1);
    const auto within = parse_seconds_ns(t[i]);
    if (!within || *within < 0)
      return "expect_time_list: '" + times + "': item " + n +
             " is not a non-negative number of seconds";
    const auto value = v.empty() ? std::optional<int64_t>(1) : parse_int(v[i]);
    if (!value || *value < 0 || *value > kMaxValue)
      return "expect_value_list: '" + values + "': item " + n +
             " is not a whole number from 0 to 1000000000";
    if (t.size() > 1 && *within == 0)
      return "expect_time_list: '" + times + "': item " + n +
             " is 0 (a list's times come after the submission)";
    if (i > 0 && *within < out->back().within_ns)
      return "expect_time_list: '" + times + "': item " + n + " is less than item " +
             std::to_string(i) + " (times must not decrease)";
    if (i > 0 && *value > out->back().value)
      return "expect_value_list: '" + values + "': item " + n + " is more than item " +
             std::to_string(i) + " (finishing later cannot earn more)";
    out->push_back({*within, *value});
  }
  return "";
}

// One data row (as many fields as the header) into `tj`; "" when valid, else what is wrong.
std::string parse_row(const std::vector<std::string>& f, const Columns& c,
                      const PhillyOptions& options, TraceJob* tj) {
  const auto gpus = parse_int(f[c.gpus]);
  const auto submit = parse_seconds_ns(f[c.submit]);
  const auto dur = parse_seconds_ns(f[c.duration]);
  const auto be = c.best_effort >= 0 ? parse_int(f[c.best_effort]) : std::optional<int64_t>(0);
  if (f[c.user].empty()) return "user: empty";
  if (!gpus) return "num_gpu: '" + f[c.gpus] + "' is not an integer";
  if (*gpus <= 0 || *gpus > 100000)
    return "num_gpu: " + f[c.gpus] + " is out of range (a job needs 1 to 100000 GPUs)";
  if (!submit) return "submit_time: '" + f[c.submit] + "' is not a number of seconds";
  if (*submit < 0) return "submit_time: " + f[c.submit] + " is negative";
  if (!dur) return "duration: '" + f[c.duration] + "' is not a number of seconds";
  if (*dur < 0) return "duration: " + f[c.duration] + " is negative";
  if (!be || (*be != 0 && *be != 1)) return "best_effort: '" + f[c.best_effort] + "' is not 0 or 1";
  std::vector<ValueStep> utility;
  const std::string bad =
      parse_utility(c.times >= 0 ? f[c.times] : "", c.values >= 0 ? f[c.values] : "", &utility);
  if (!bad.empty()) return bad;

  Job& j = tj->job;
  j.name = "philly-" + f[c.id];
  j.namespace_ = options.namespace_;
  j.queue = f[c.user];
  j.exec_mut().priority_class = *be ? options.best_effort_class : options.strict_class;
  j.preemptible = *be != 0;
  j.submit_ns = *submit;
  j.walltime_ns = *dur;
  tj->duration_ns = *dur;
  // Chronus: a strict or soft job's times count from its submission, the first one is its
  // expected completion time; a best-effort row repeats its submit time there (no deadline),
  // and a lone time of 0 is none either.
  if (*be == 0 && !utility.empty() && utility.front().within_ns > 0) {
    tj->complete_by_ns = *submit + utility.front().within_ns;
    tj->utility = std::move(utility);
  }
  set_gpu_shape(j, static_cast<int32_t>(*gpus), options.gpus_per_node);
  // A recurring job (right-sizing's history, sim/right_size.h): its VC's runs of one DL model
  // on as many GPUs.
  if (c.model >= 0 && !f[c.model].empty())
    tj->family = f[c.user] + "/" + f[c.model] + "/" + f[c.gpus];
  return "";
}

}  // namespace

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
  Columns c;
  if (const std::string missing = find_columns(header, &c); !missing.empty()) {
    out.errors.push_back(name + ":1: header lacks column(s) " + missing);
    return out;
  }
  // 2. Rows: one job each; a bad row is reported and dropped.
  int64_t line_no = 1;
  JobId next_id = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    ++out.rows;
    const std::string where = name + ":" + std::to_string(line_no);
    const auto f = split_csv(line);
    TraceJob tj;
    const std::string bad = f.size() != header.size()
                                ? "expected " + std::to_string(header.size()) + " columns, got " +
                                      std::to_string(f.size())
                                : parse_row(f, c, options, &tj);
    if (!bad.empty()) {
      out.errors.push_back(where + ": " + bad);
      continue;
    }
    tj.where = where;
    tj.job.id = next_id++;
    out.jobs.push_back(std::move(tj));
  }
  return out;
}

}  // namespace sluice::sim
