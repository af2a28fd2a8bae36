#pragma once
// GPU discovery behind one interface: fake GPUs from a spec string (tests, benchmarks, laptops)
// or the real ones through NVML, loaded at run time so the binary has no driver dependency.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "proto/protocol.h"

namespace sluice::agent {

// One sample of a pod's GPU use: the most memory any one of its GPUs holds, and their mean
// utilisation.
struct PodGpuSample {
  int64_t used_mib = 0;
  int32_t util_pct = 0;
};

// A pod's simulated use on fake GPUs: the file $SLUICE_GPU_USE_FILE holds "USED_MIB UTIL_PCT"
// (integers, e.g. "11264 35"; MiB per GPU, 0..100; one trailing newline allowed). Anything
// else is an error that says why.
Result<PodGpuSample> parse_gpu_use(std::string_view text);

// What the agent reports about its GPUs; utilisation is sampled per sync where it is known.
class GpuProvider {
 public:
  virtual ~GpuProvider() = default;
  // Every GPU of the node, ordered by device index (CUDA_VISIBLE_DEVICES numbering).
  virtual const std::vector<proto::AgentGpu>& gpus() const = 0;
  // Current utilisation in percent per GPU index, or empty when unknown (fake GPUs).
  virtual std::vector<int32_t> utilization_pct() { return {}; }
  // "fake" or "nvml".
  virtual std::string kind() const = 0;
  // A pod's GPU use now (`gpus`: its device indices; `use_file`: its $SLUICE_GPU_USE_FILE);
  // nullopt: nothing measured. NVML reads the devices the pod holds; fake GPUs read the file.
  virtual std::optional<PodGpuSample> pod_sample(const std::vector<int32_t>& gpus,
                                                 const std::string& use_file) {
    (void)gpus;
    (void)use_file;
    return std::nullopt;
  }
};

// One group of a fake spec: COUNTxMODEL[:MEM].
struct FakeGpuGroup {
  int32_t count = 0;
  std::string model;
  int64_t memory_mib = 0;
};

// Parses the part after "fake:" ("8xH100", "8xH100:80Gi,2xL4:24Gi"). Memory takes Mi, Gi or Ti;
// without it, H100/H200/A100 get 80Gi, L4 24Gi, anything else 16Gi.
Result<std::vector<FakeGpuGroup>> parse_fake_spec(std::string_view spec);

// The fake GPUs of `node`: uuid fake-<node>-<i>, NUMA node i*2/count (two sockets), NVLink peers
// = the other GPUs of the same group (each group is one NVLink domain).
std::vector<proto::AgentGpu> make_fake_gpus(const std::vector<FakeGpuGroup>& groups,
                                            const std::string& node);

// "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100", "NVIDIA L4" -> "L4":
// drop the brand words, keep the first token up to a space or '-'.
std::string normalize_model(std::string_view nvml_name);

// Options of the NVML provider; the library name is a parameter so tests can point it at a file
// that does not exist.
struct NvmlOptions {
  std::string library = "libnvidia-ml.so.1";
  std::string sysfs_pci = "/sys/bus/pci/devices";
};

// "auto" (NVML) or "fake:SPEC". Errors are complete sentences meant for the user.
Result<std::unique_ptr<GpuProvider>> make_gpu_provider(const std::string& spec,
                                                       const std::string& node,
                                                       const NvmlOptions& nvml = {});

// NVML discovery alone (the "auto" provider).
Result<std::unique_ptr<GpuProvider>> make_nvml_provider(const NvmlOptions& nvml);

}  // namespace sluice::agent
