#include "sim/fgd/trace.h"

#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

#include "proto/split.h"
#include "sim/csv_text.h"

namespace sluice::sim::fgd {

namespace {

// A CSV file read row by row, columns looked up by header name.
class Csv {
 public:
  static Result<Csv> open(const std::string& path) {
    Csv csv;
    csv.path_ = path;
    csv.in_.open(path);
    if (!csv.in_) return Error{path + ": cannot open (does the file exist?)"};
    std::string header;
    if (!std::getline(csv.in_, header))
      return Error{path + ":1: empty file, expected a header row"};
    csv.header_ = split_csv(header);
    csv.line_ = 1;
    return csv;
  }
  std::optional<int> column(const std::string& name) const {
    for (size_t i = 0; i < header_.size(); ++i)
      if (header_[i] == name) return static_cast<int>(i);
    return std::nullopt;
  }
  bool next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_;
      if (line.empty() || line == "\r") continue;
      row_ = split_csv(line);
      return true;
    }
    return false;
  }
  std::string where() const { return path_ + ":" + std::to_string(line_); }
  const std::vector<std::string>& row() const { return row_; }
  const std::string& path() const { return path_; }
  // The field of column `col`, or an error naming the line.
  Result<std::string> field(int col, const std::string& name) const {
    if (static_cast<size_t>(col) >= row_.size())
      return Error{where() + ": missing column '" + name + "' (row has " +
                   std::to_string(row_.size()) + " fields, header " +
                   std::to_string(header_.size()) + ")"};
    return row_[static_cast<size_t>(col)];
  }
  Result<int64_t> integer(int col, const std::string& name, int64_t lo, int64_t hi) const {
    auto f = field(col, name);
    if (!f) return Error{f.error()};
    int64_t v = 0;
    const std::string& s = *f;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
      return Error{where() + ": column '" + name + "': '" + s + "' is not an integer"};
    if (v < lo || v > hi)
      return Error{where() + ": column '" + name + "': " + s + " is outside [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]"};
    return v;
  }
  Result<int> require(const std::string& name) const {
    auto c = column(name);
    if (!c) return Error{path_ + ":1: header has no column '" + name + "'"};
    return *c;
  }

 private:
  std::string path_;
  std::ifstream in_;
  std::vector<std::string> header_, row_;
  int64_t line_ = 0;
};

#define SLUICE_TRY(var, expr)                  \
  auto var##_r = (expr);                       \
  if (!var##_r) return Error{var##_r.error()}; \
  auto var = *var##_r

}  // namespace

Result<std::vector<TraceNode>> read_nodes(const std::string& path) {
  auto opened = Csv::open(path);
  if (!opened) return Error{opened.error()};
  Csv& csv = *opened;
  SLUICE_TRY(c_name, csv.require("sn"));
  SLUICE_TRY(c_cpu, csv.require("cpu_milli"));
  SLUICE_TRY(c_mem, csv.require("memory_mib"));
  SLUICE_TRY(c_gpu, csv.require("gpu"));
  SLUICE_TRY(c_model, csv.require("model"));
  std::vector<TraceNode> nodes;
  while (csv.next()) {
    TraceNode n;
    SLUICE_TRY(name, csv.field(c_name, "sn"));
    SLUICE_TRY(cpu, csv.integer(c_cpu, "cpu_milli", 0, int64_t{1} << 40));
    SLUICE_TRY(mem, csv.integer(c_mem, "memory_mib", 0, int64_t{1} << 40));
    SLUICE_TRY(gpus, csv.integer(c_gpu, "gpu", 0, 64));
    SLUICE_TRY(model, csv.field(c_model, "model"));
    if (gpus > 0 && model.empty())
      return Error{csv.where() + ": column 'model': empty for a node with GPUs"};
    n.name = name;
    n.cpu_milli = cpu;
    n.memory_mib = mem;
    n.gpus = static_cast<int32_t>(gpus);
    n.model = model;
    nodes.push_back(std::move(n));
  }
  if (nodes.empty()) return Error{path + ": no nodes"};
  return nodes;
}

Result<std::vector<TracePod>> read_pods(const std::string& path) {
  auto opened = Csv::open(path);
  if (!opened) return Error{opened.error()};
  Csv& csv = *opened;
  SLUICE_TRY(c_name, csv.require("name"));
  SLUICE_TRY(c_cpu, csv.require("cpu_milli"));
  SLUICE_TRY(c_mem, csv.require("memory_mib"));
  SLUICE_TRY(c_ngpu, csv.require("num_gpu"));
  SLUICE_TRY(c_milli, csv.require("gpu_milli"));
  const std::optional<int> c_spec = csv.column("gpu_spec");
  std::vector<TracePod> pods;
  while (csv.next()) {
    TracePod p;
    SLUICE_TRY(name, csv.field(c_name, "name"));
    SLUICE_TRY(cpu, csv.integer(c_cpu, "cpu_milli", 0, int64_t{1} << 40));
    SLUICE_TRY(mem, csv.integer(c_mem, "memory_mib", 0, int64_t{1} << 40));
    SLUICE_TRY(ngpu, csv.integer(c_ngpu, "num_gpu", 0, 64));
    SLUICE_TRY(milli, csv.integer(c_milli, "gpu_milli", 0, 1000));
    if (ngpu > 1 && milli != 1000)
      return Error{csv.where() + ": a pod with num_gpu " + std::to_string(ngpu) +
                   " must use whole GPUs (gpu_milli 1000), got " + std::to_string(milli)};
    if (ngpu >= 1 && milli == 0)
      return Error{csv.where() + ": a pod with num_gpu " + std::to_string(ngpu) +
                   " has gpu_milli 0"};
    p.name = name;
    p.cpu_milli = cpu;
    p.memory_mib = mem;
    p.num_gpu = static_cast<int32_t>(ngpu);
    p.gpu_milli = ngpu == 0 ? 0 : static_cast<int32_t>(milli);
    if (c_spec) {
      SLUICE_TRY(spec, csv.field(*c_spec, "gpu_spec"));
      p.gpu_spec = proto::split_list(spec, '|');
    }
    pods.push_back(std::move(p));
  }
  if (pods.empty()) return Error{path + ": no pods"};
  return pods;
}

Result<std::map<std::string, std::vector<Curve>>> read_expected(const std::string& path) {
  auto opened = Csv::open(path);
  if (!opened) return Error{opened.error()};
  Csv& csv = *opened;
  SLUICE_TRY(c_pol, csv.require("sc_policy"));
  SLUICE_TRY(c0, csv.require("0"));
  std::map<std::string, std::vector<Curve>> out;
  while (csv.next()) {
    SLUICE_TRY(pol, csv.field(c_pol, "sc_policy"));
    Curve curve{};
    for (int k = 0; k < kColumns; ++k) {
      SLUICE_TRY(f, csv.field(c0 + k, std::to_string(k)));
      char* end = nullptr;
      curve[static_cast<size_t>(k)] = std::strtod(f.c_str(), &end);
      if (f.empty() || end != f.c_str() + f.size())
        return Error{csv.where() + ": column '" + std::to_string(k) + "': '" + f +
                     "' is not a number"};
    }
    out[pol].push_back(curve);
  }
  return out;
}

}  // namespace sluice::sim::fgd
