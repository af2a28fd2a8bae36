#include "sim/trace_openb.h"

#include <map>
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
  std::string missing;
  for (const char* c : {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"})
    if (h.get(c) < 0) missing += std::string(missing.empty() ? "" : ", ") + c;
  if (!missing.empty()) {
    out.errors.push_back(name + ":1: header lacks column(s) " + missing);
    return out;
  }
  const int c_name = h.get("name"), c_cpu = h.get("cpu_milli"), c_mem = h.get("memory_mib"),
            c_gpu = h.get("num_gpu"), c_milli = h.get("gpu_milli"), c_spec = h.get("gpu_spec"),
            c_qos = h.get("qos"), c_create = h.get("creation_time"),
            c_delete = h.get("deletion_time"), c_sched = h.get("scheduled_time");

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
    auto bad = [&](const std::string& what) { out.errors.push_back(where + ": " + what); };
    const auto cpu = parse_int(f[c_cpu]);
    const auto mem = parse_int(f[c_mem]);
    const auto gpus = parse_int(f[c_gpu]);
    const auto milli = parse_int(f[c_milli]);
    if (f[c_name].empty()) {
      bad("name: empty");
      continue;
    }
    if (!cpu || *cpu < 0) {
      bad("cpu_milli: '" + f[c_cpu] + "' is not a non-negative integer");
      continue;
    }
    if (!mem || *mem < 0) {
      bad("memory_mib: '" + f[c_mem] + "' is not a non-negative integer");
      continue;
    }
    if (!gpus || *gpus < 0 || *gpus > 64) {
      bad("num_gpu: '" + f[c_gpu] + "' is not an integer in [0, 64]");
      continue;
    }
    if (!milli || *milli < 0 || *milli > 1000) {
      bad("gpu_milli: '" + f[c_milli] + "' is not an integer in [0, 1000]");
      continue;
    }
    if (*gpus > 0 && *milli == 0) {
      bad("gpu_milli: 0 with num_gpu " + f[c_gpu]);
      continue;
    }
    if (*gpus > 1 && *milli != 1000) {
      bad("gpu_milli: " + f[c_milli] + " with num_gpu " + f[c_gpu] +
          " (a fraction of a GPU needs num_gpu 1)");
      continue;
    }
    if (*cpu == 0 && *mem == 0 && *gpus == 0) {
      bad("the pod requests nothing");
      continue;
    }
    // Class from QoS.
    std::string cls = options.high_class;
    bool preemptible = false;
    if (c_qos >= 0) {
      const std::string& q = f[c_qos];
      if (q == "BE") {
        cls = options.low_class;
        preemptible = true;
      } else if (q == "Burstable") {
        cls = options.normal_class;
        preemptible = true;
      } else if (q != "LS" && q != "Guaranteed") {
        bad("qos: '" + q + "' is not LS, Guaranteed, Burstable or BE");
        continue;
      }
    }
    // Times.
    TimeNs submit = static_cast<TimeNs>(out.rows - 1) * kNsPerSec;
    if (c_create >= 0) {
      const auto t = parse_seconds_ns(f[c_create]);
      if (!t || *t < 0) {
        bad("creation_time: '" + f[c_create] + "' is not a non-negative number of seconds");
        continue;
      }
      submit = *t;
    }
    TimeNs duration = options.default_duration_ns;
    if (c_delete >= 0) {
      const auto del = parse_seconds_ns(f[c_delete]);
      if (!del) {
        bad("deletion_time: '" + f[c_delete] + "' is not a number of seconds");
        continue;
      }
      TimeNs from = submit;
      if (c_sched >= 0 && !f[c_sched].empty()) {
        const auto s = parse_seconds_ns(f[c_sched]);
        if (!s || *s < submit) {
          bad("scheduled_time: '" + f[c_sched] + "' is not a time at or after creation_time");
          continue;
        }
        from = *s;
      }
      duration = *del - from;
      if (duration < 0) {
        bad("deletion_time: " + f[c_delete] + " is before the pod " +
            (from == submit ? "was created" : "was scheduled") + " (negative run time)");
        continue;
      }
    }
    TraceJob tj;
    tj.where = where;
    Job& j = tj.job;
    j.id = next_id++;
    j.name = f[c_name];
    j.namespace_ = options.namespace_;
    j.queue = options.queue;
    j.exec_mut().priority_class = cls;
    j.preemptible = preemptible;
    j.submit_ns = submit;
    j.walltime_ns = duration;
    tj.duration_ns = duration;
    if (c_spec >= 0 && *gpus > 0) j.allowed_models = proto::split_list(f[c_spec], '|');
    PodSet ps;
    ps.name = "main";
    ps.count = 1;
    ps.gpus = static_cast<int32_t>(*gpus);
    ps.gpu_milli = *gpus > 0 ? static_cast<int32_t>(*milli) : 1000;
    ps.requests[kGpu] = *gpus * (*gpus > 0 ? *milli : 0);
    ps.requests[kCpu] = *cpu;
    ps.requests[kMemory] = *mem;
    j.pod_sets = {ps};
    out.jobs.push_back(std::move(tj));
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
