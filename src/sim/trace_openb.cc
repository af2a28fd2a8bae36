#include "sim/trace_openb.h"

#include <map>
#include <optional>
#include <sstream>

#include "proto/split.h"
#include "sim/csv_text.h"
#include "sim/parse_num.h"

namespace sluice::sim {

namespace {

// Columns found by header name; -1 when absent.
struct Header {
  std::vector<std::string> names;
  std::map<std::string, int> col;
  int get(const std::string& n) const {
    const auto it = col.find(n);
    return it == col.end() ? -1 : it->second;
  }
};

Header read_header(const std::string& line) {
  Header h;
  h.names = split_csv(line);
  for (size_t i = 0; i < h.names.size(); ++i) h.col.emplace(h.names[i], static_cast<int>(i));
  return h;
}

// A YAML double-quoted scalar (the names come from a data file).
std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The pod list's columns; -1 for an optional column the file lacks.
struct PodColumns {
  int name, cpu, mem, gpu, milli, spec, qos, create, del, sched;
};

// The pod list's columns from its header; none (the error added to `errors`) when a required
// one is missing.
std::optional<PodColumns> pod_columns(const Header& h, const std::string& name,
                                      std::vector<std::string>& errors) {
  std::string missing;
  for (const char* c : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
    if (h.get(c) < 0) missing += std::string(missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    errors.push_back(name + ":1: header lacks column(s) " + missing);
    return std::nullopt;
  }
  return PodColumns{.name = h.get("name"),
                    .cpu = h.get("cpu_milli"),
                    .mem = h.get("memory_mib"),
                    .gpu = h.get("num_gpu"),
                    .milli = h.get("gpu_milli"),
                    .spec = h.get("gpu_spec"),
                    .qos = h.get("qos"),
                    .create = h.get("creation_time"),
                    .del = h.get("deletion_time"),
                    .sched = h.get("scheduled_time")};
}

// One pod row's fields, as the steps of read_openb check them.
struct PodRow {
  int64_t cpu = 0, mem = 0, gpus = 0, milli = 0;
  std::string cls;
  bool preemptible = false;
  TimeNs submit = 0, duration = 0;
};

// Checks the row's name and reads its requests (cpu_milli, memory_mib, num_gpu, gpu_milli) into
// `r`; the first problem, "" when none.
std::string read_requests(const std::vector<std::string>& f, const PodColumns& c, PodRow& r) {
  const auto cpu = parse_int(f[c.cpu]);
  const auto mem = parse_int(f[c.mem]);
  const auto gpus = parse_int(f[c.gpu]);
  const auto milli = parse_int(f[c.milli]);
  if (f[c.name].empty()) return "name: empty";
  if (!cpu || *cpu < 0) return "cpu_milli: '" + f[c.cpu] + "' is not a non-negative integer";
  if (!mem || *mem < 0) return "memory_mib: '" + f[c.mem] + "' is not a non-negative integer";
  if (!gpus || *gpus < 0 || *gpus > 64)
    return "num_gpu: '" + f[c.gpu] + "' is not an integer in [0, 64]";
  if (!milli || *milli < 0 || *milli > 1000)
    return "gpu_milli: '" + f[c.milli] + "' is not an integer in [0, 1000]";
  if (*gpus > 0 && *milli == 0) return "gpu_milli: 0 with num_gpu " + f[c.gpu];
  if (*gpus > 1 && *milli != 1000)
    return "gpu_milli: " + f[c.milli] + " with num_gpu " + f[c.gpu] +
           " (a fraction of a GPU needs num_gpu 1)";
  if (*cpu == 0 && *mem == 0 && *gpus == 0) return "the pod requests nothing";
  r.cpu = *cpu;
  r.mem = *mem;
  r.gpus = *gpus;
  r.milli = *milli;
  return "";
}

// The row's priority class and preemptibility from its qos (high when the file has no qos
// column); the problem, "" when none.
std::string read_qos(const std::vector<std::string>& f, const PodColumns& c,
                     const OpenbOptions& options, PodRow& r) {
  r.cls = options.high_class;
  r.preemptible = false;
  if (c.qos < 0) return "";
  const std::string& q = f[c.qos];
  if (q == "BE") {
    r.cls = options.low_class;
    r.preemptible = true;
  } else if (q == "Burstable") {
    r.cls = options.normal_class;
    r.preemptible = true;
  } else if (q != "LS" && q != "Guaranteed") {
    return "qos: '" + q + "' is not LS, Guaranteed, Burstable or BE";
  }
  return "";
}

// The row's submit time and run time (row `row` of the file, from 0, arrives at `row` seconds
// without a creation_time column); the first problem, "" when none.
std::string read_times(const std::vector<std::string>& f, const PodColumns& c,
                       const OpenbOptions& options, int64_t row, PodRow& r) {
  TimeNs submit = static_cast<TimeNs>(row) * kNsPerSec;
  if (c.create >= 0) {
    const auto t = parse_seconds_ns(f[c.create]);
    if (!t || *t < 0)
      return "creation_time: '" + f[c.create] + "' is not a non-negative number of seconds";
    submit = *t;
  }
  TimeNs duration = options.default_duration_ns;
  if (c.del >= 0) {
    const auto del = parse_seconds_ns(f[c.del]);
    if (!del) return "deletion_time: '" + f[c.del] + "' is not a number of seconds";
    TimeNs from = submit;
    if (c.sched >= 0 && !f[c.sched].empty()) {
      const auto s = parse_seconds_ns(f[c.sched]);
      if (!s || *s < submit)
        return "scheduled_time: '" + f[c.sched] + "' is not a time at or after creation_time";
      from = *s;
    }
    duration = *del - from;
    if (duration < 0)
      return "deletion_time: " + f[c.del] + " is before the pod " +
             (from == submit ? "was created" : "was scheduled") + " (negative run time)";
  }
  r.submit = submit;
  r.duration = duration;
  return "";
}

// The checked row as a one-pod job of the trace.
TraceJob pod_trace_job(const std::string& where, JobId id, const std::vector<std::string>& f,
                       const PodColumns& c, const PodRow& r, const OpenbOptions& options) {
  TraceJob tj;
  tj.where = where;
  Job& j = tj.job;
  j.id = id;
  j.name = f[c.name];
  j.namespace_ = options.namespace_;
  j.queue = options.queue;
  j.exec_mut().priority_class = r.cls;
  j.preemptible = r.preemptible;
  j.submit_ns = r.submit;
  j.walltime_ns = r.duration;
  tj.duration_ns = r.duration;
  if (c.spec >= 0 && r.gpus > 0) j.allowed_models = proto::split_list(f[c.spec], '|');
  PodSet ps;
  ps.name = "main";
  ps.count = 1;
  ps.gpus = static_cast<int32_t>(r.gpus);
  ps.gpu_milli = r.gpus > 0 ? static_cast<int32_t>(r.milli) : 1000;
  ps.requests[kGpu] = r.gpus * (r.gpus > 0 ? r.milli : 0);
  ps.requests[kCpu] = r.cpu;
  ps.requests[kMemory] = r.mem;
  j.pod_sets = {ps};
  return tj;
}

}  // namespace

TraceOutput read_openb(const std::string& name, const std::string& text,
                       const OpenbOptions& options) {
  TraceOutput out;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    out.errors.push_back(name + ":1: empty file (expected a header line)");
    return out;
  }
  const Header h = read_header(line);
  const auto c = pod_columns(h, name, out.errors);
  if (!c) return out;

  int64_t line_no = 1;
  JobId next_id = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    ++out.rows;
    const std::string where = name + ":" + std::to_string(line_no);
    const auto f = split_csv(line);
    if (f.size() != h.names.size()) {
      out.errors.push_back(where + ": expected " + std::to_string(h.names.size()) +
                           " columns, got " + std::to_string(f.size()));
      continue;
    }
    PodRow r;
    std::string bad = read_requests(f, *c, r);
    if (bad.empty()) bad = read_qos(f, *c, options, r);
    if (bad.empty()) bad = read_times(f, *c, options, out.rows - 1, r);
    if (!bad.empty()) {
      out.errors.push_back(where + ": " + bad);
      continue;
    }
    out.jobs.push_back(pod_trace_job(where, next_id++, f, *c, r, options));
  }
  return out;
}

bool is_openb_node_list(const std::string& text) {
  const size_t eol = text.find('\n');
  const Header h = read_header(text.substr(0, eol));
  return h.get("sn") >= 0 && h.get("gpu") >= 0 && h.get("cpu_milli") >= 0;
}

std::string openb_nodes_to_cluster_yaml(const std::string& name, const std::string& text,
                                        std::vector<std::string>& errors) {
  std::ostringstream y;
  y << "# Converted from the openb node list " << yaml_quote(name) << "\n"
    << "apiVersion: sluice.dev/v1alpha1\nkind: Cluster\nmetadata: {name: openb}\nspec:\n"
    << "  nodes:\n";
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) {
    errors.push_back(name + ":1: empty file (expected a header line)");
    return "";
  }
  const Header h = read_header(line);
  std::string missing;
  for (const char* c : {"sn", "cpu_milli", "memory_mib", "gpu", "model"})
    if (h.get(c) < 0) missing += std::string(missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    errors.push_back(name + ":1: header lacks column(s) " + missing);
    return "";
  }
  const int c_sn = h.get("sn"), c_cpu = h.get("cpu_milli"), c_mem = h.get("memory_mib"),
            c_gpu = h.get("gpu"), c_model = h.get("model");
  int64_t line_no = 1, nodes = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const std::string where = name + ":" + std::to_string(line_no);
    const auto f = split_csv(line);
    if (f.size() != h.names.size()) {
      errors.push_back(where + ": expected " + std::to_string(h.names.size()) + " columns, got " +
                       std::to_string(f.size()));
      continue;
    }
    const auto cpu = parse_int(f[c_cpu]);
    const auto mem = parse_int(f[c_mem]);
    const auto gpus = parse_int(f[c_gpu]);
    std::string bad;
    if (f[c_sn].empty())
      bad = "sn: empty";
    else if (!cpu || *cpu <= 0)
      bad = "cpu_milli: '" + f[c_cpu] + "' is not a positive integer";
    else if (!mem || *mem <= 0)
      bad = "memory_mib: '" + f[c_mem] + "' is not a positive integer";
    else if (!gpus || *gpus < 0 || *gpus > 64)
      bad = "gpu: '" + f[c_gpu] + "' is not an integer in [0, 64]";
    else if (*gpus > 0 && f[c_model].empty())
      bad = "model: empty for a node with GPUs";
    if (!bad.empty()) {
      errors.push_back(where + ": " + bad);
      continue;
    }
    ++nodes;
    y << "  - {name: " << yaml_quote(f[c_sn]) << ", cpu: " << *cpu << "m, memory: " << *mem << "Mi";
    if (*gpus > 0) y << ", gpus: {count: " << *gpus << ", model: " << yaml_quote(f[c_model]) << "}";
    y << "}\n";
  }
  if (nodes == 0) {
    errors.push_back(name + ": no nodes");
    return "";
  }
  return y.str();
}

}  // namespace sluice::sim
