// Fake GPU specs, model-name normalisation and the provider factory. NVML lives in nvml.cc.
#include "agent/gpu.h"

#include <cctype>
#include <charconv>
#include <fstream>

namespace sluice::agent {
namespace {

// A node with more GPUs than this is a typo, not a machine.
constexpr int32_t kMaxFakeGpus = 1024;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool parse_int64(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

int64_t default_memory_mib(std::string_view model) {
  if (model == "H100" || model == "H200" || model == "A100") return 80 * 1024;
  if (model == "L4") return 24 * 1024;
  return 16 * 1024;
}

Result<int64_t> parse_memory_mib(std::string_view s, std::string_view group) {
  struct Unit {
    std::string_view suffix;
    int64_t mib;
  };
  static constexpr Unit kUnits[] = {{"Ti", 1024 * 1024}, {"Gi", 1024}, {"Mi", 1}};
  for (const auto& u : kUnits) {
    if (s.size() > u.suffix.size() && s.substr(s.size() - u.suffix.size()) == u.suffix) {
      int64_t n = 0;
      if (!parse_int64(s.substr(0, s.size() - u.suffix.size()), n) || n <= 0 ||
          n > (int64_t{1} << 40) / u.mib) {
        break;
      }
      return n * u.mib;
    }
  }
  return Error{"fake GPU group \"" + std::string(group) + "\": bad memory \"" + std::string(s) +
               "\" (want a positive integer with Mi, Gi or Ti, e.g. 80Gi)"};
}

}  // namespace

Result<std::vector<FakeGpuGroup>> parse_fake_spec(std::string_view spec) {
  const std::string kWant =
      " (want COUNTxMODEL[:MEM] joined by ',', e.g. 8xH100 or 8xH100:80Gi,2xL4)";
  std::vector<FakeGpuGroup> groups;
  int64_t total = 0;
  if (trim(spec).empty()) return Error{"empty fake GPU spec" + kWant};
  // 1. Split on ','; every group must be well-formed (no empty groups from ",,").
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view group = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (group.empty())
      return Error{"empty group in fake GPU spec \"" + std::string(spec) + "\"" + kWant};
    // 2. COUNT 'x' MODEL [':' MEM]
    size_t x = group.find('x');
    if (x == std::string_view::npos || x == 0) {
      return Error{"fake GPU group \"" + std::string(group) + "\": missing COUNTx" + kWant};
    }
    int64_t count = 0;
    if (!parse_int64(group.substr(0, x), count) || count <= 0) {
      return Error{"fake GPU group \"" + std::string(group) +
                   "\": count must be a positive integer" + kWant};
    }
    std::string_view rest = group.substr(x + 1);
    std::string_view model = rest;
    std::string_view mem;
    if (size_t colon = rest.find(':'); colon != std::string_view::npos) {
      model = rest.substr(0, colon);
      mem = rest.substr(colon + 1);
      if (mem.empty()) {
        return Error{"fake GPU group \"" + std::string(group) + "\": empty memory after ':'" +
                     kWant};
      }
    }
    if (model.empty()) {
      return Error{"fake GPU group \"" + std::string(group) + "\": missing model" + kWant};
    }
    for (char c : model) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
        return Error{"fake GPU group \"" + std::string(group) + "\": bad character '" +
                     std::string(1, c) + "' in model (letters, digits, '-', '_', '.')"};
      }
    }
    FakeGpuGroup g;
    g.count = static_cast<int32_t>(std::min<int64_t>(count, kMaxFakeGpus + 1));
    g.model = std::string(model);
    if (mem.empty()) {
      g.memory_mib = default_memory_mib(model);
    } else {
      auto m = parse_memory_mib(mem, group);
      if (!m) return Error{m.error()};
      g.memory_mib = *m;
    }
    total += count;
    if (total > kMaxFakeGpus) {
      return Error{"fake GPU spec \"" + std::string(spec) + "\" has more than " +
                   std::to_string(kMaxFakeGpus) + " GPUs"};
    }
    groups.push_back(std::move(g));
    if (comma == spec.size()) break;
  }
  return groups;
}

std::vector<proto::AgentGpu> make_fake_gpus(const std::vector<FakeGpuGroup>& groups,
                                            const std::string& node) {
  int32_t count = 0;
  for (const auto& g : groups) count += g.count;
  std::vector<proto::AgentGpu> out;
  out.reserve(static_cast<size_t>(count));
  int32_t index = 0;
  for (const auto& g : groups) {
    const int32_t first = index;
    for (int32_t k = 0; k < g.count; ++k, ++index) {
      proto::AgentGpu gpu;
      gpu.index = index;
      gpu.model = g.model;
      gpu.memory_mib = g.memory_mib;
      // Two sockets: the first half of the GPUs on NUMA node 0, the second half on 1.
      gpu.numa_node = static_cast<int32_t>(int64_t{index} * 2 / count);
      for (int32_t p = first; p < first + g.count; ++p) {
        if (p != index) gpu.nvlink_peers.push_back(p);
      }
      gpu.uuid = "fake-" + node + "-" + std::to_string(index);
      out.push_back(std::move(gpu));
    }
  }
  return out;
}

std::string normalize_model(std::string_view name) {
  name = trim(name);
  // Brand words NVML puts in front of the model ("NVIDIA H100 ...", "Tesla V100-SXM2-16GB").
  static constexpr std::string_view kBrands[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "};
  for (bool again = true; again;) {
    again = false;
    for (auto b : kBrands) {
      if (name.substr(0, b.size()) == b) {
        name = trim(name.substr(b.size()));
        again = true;
      }
    }
  }
  size_t end = name.find_first_of(" -");
  std::string model(name.substr(0, end));
  // "RTX 4090", "RTX A6000": the first word alone would merge different cards.
  if ((model == "RTX" || model == "GTX" || model == "TITAN") && end != std::string_view::npos) {
    std::string_view rest = trim(name.substr(end + 1));
    model += std::string(rest.substr(0, rest.find_first_of(" -")));
  }
  return model.empty() ? std::string("unknown") : model;
}

Result<PodGpuSample> parse_gpu_use(std::string_view text) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  const size_t space = text.find(' ');
  int64_t mib = 0, util = 0;
  if (space == std::string_view::npos || !parse_int64(text.substr(0, space), mib) ||
      !parse_int64(text.substr(space + 1), util))
    return Error{"GPU use must be \"USED_MIB UTIL_PCT\" (two integers, e.g. \"11264 35\")"};
  constexpr int64_t kMaxMib = int64_t{1} << 30;  // a PiB of GPU memory is a typo
  if (mib < 0 || mib > kMaxMib)
    return Error{"GPU use: USED_MIB must be 0.." + std::to_string(kMaxMib)};
  if (util < 0 || util > 100) return Error{"GPU use: UTIL_PCT must be 0..100"};
  return PodGpuSample{mib, static_cast<int32_t>(util)};
}

namespace {

class FakeGpuProvider final : public GpuProvider {
 public:
  explicit FakeGpuProvider(std::vector<proto::AgentGpu> gpus) : gpus_(std::move(gpus)) {}
  const std::vector<proto::AgentGpu>& gpus() const override { return gpus_; }
  std::string kind() const override { return "fake"; }
  // The pod's own report of its simulated use; a missing or malformed file: nothing measured.
  std::optional<PodGpuSample> pod_sample(const std::vector<int32_t>& gpus,
                                         const std::string& use_file) override {
    if (gpus.empty() || use_file.empty()) return std::nullopt;
    std::ifstream in(use_file);
    char buf[64] = {};
    in.read(buf, sizeof buf - 1);
    auto sample = parse_gpu_use(std::string_view(buf, static_cast<size_t>(in.gcount())));
    if (!sample) return std::nullopt;
    return *sample;
  }

 private:
  std::vector<proto::AgentGpu> gpus_;
};

}  // namespace

Result<std::unique_ptr<GpuProvider>> make_gpu_provider(const std::string& spec,
                                                       const std::string& node,
                                                       const NvmlOptions& nvml) {
  if (spec == "auto" || spec.empty()) return make_nvml_provider(nvml);
  if (spec.rfind("fake:", 0) == 0) {
    auto groups = parse_fake_spec(std::string_view(spec).substr(5));
    if (!groups) return Error{groups.error()};
    return std::unique_ptr<GpuProvider>(
        std::make_unique<FakeGpuProvider>(make_fake_gpus(*groups, node)));
  }
  if (spec == "none") {
    return std::unique_ptr<GpuProvider>(
        std::make_unique<FakeGpuProvider>(std::vector<proto::AgentGpu>{}));
  }
  return Error{"unknown --gpus \"" + spec + "\" (want auto, none or fake:SPEC, e.g. fake:8xH100)"};
}

}  // namespace sluice::agent
