// NVML discovery, loaded with dlopen at run time: no CUDA headers and no link-time dependency,
// so one binary runs on GPU nodes and on machines without a driver (with --gpus fake:...).
// Only the handful of entry points the agent needs are declared here, with their C signatures.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <mutex>

#include "agent/gpu.h"

namespace sluice::agent {
namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr unsigned kNvmlBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE, UUID_V2 as well
constexpr unsigned kNvmlMaxLinks = 18;    // NVML_NVLINK_MAX_LINKS (H100)
constexpr int kP2pCapsNvlink = 2;         // NVML_P2P_CAPS_INDEX_NVLINK
constexpr int kP2pStatusOk = 0;           // NVML_P2P_STATUS_OK
constexpr unsigned kMigEnabled = 1;       // NVML_DEVICE_MIG_ENABLE

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlPciInfo_t {  // the _v3 layout
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

struct NvmlApi {
  void* handle = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_count)(unsigned*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*get_pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*get_p2p)(nvmlDevice_t, nvmlDevice_t, int, int*) = nullptr;
  nvmlReturn_t (*get_link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*get_link_remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;

  std::string err(nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(r);
  }
};

template <class F>
void load(void* h, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(h, name));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// NVML prints bus ids as "00000000:1B:00.0"; sysfs uses "0000:1b:00.0".
std::string sysfs_bus_id(const char* nvml_bus_id) {
  std::string id = lower(nvml_bus_id);
  if (size_t colon = id.find(':'); colon != std::string::npos && colon > 4) {
    id = id.substr(colon - 4);
  }
  return id;
}

class NvmlGpuProvider final : public GpuProvider {
 public:
  NvmlGpuProvider(NvmlApi api, std::vector<nvmlDevice_t> devices, std::vector<proto::AgentGpu> gpus)
      : api_(api), devices_(std::move(devices)), gpus_(std::move(gpus)) {}
  ~NvmlGpuProvider() override {
    if (api_.shutdown) api_.shutdown();
    // The library stays loaded: NVML may keep threads, and unloading it buys nothing.
  }
  const std::vector<proto::AgentGpu>& gpus() const override { return gpus_; }
  std::string kind() const override { return "nvml"; }
  std::vector<int32_t> utilization_pct() override {
    std::lock_guard lock(mu_);
    std::vector<int32_t> out;
    if (!api_.get_utilization) return out;
    for (auto* d : devices_) {
      nvmlUtilization_t u{};
      out.push_back(api_.get_utilization(d, &u) == kNvmlSuccess ? static_cast<int32_t>(u.gpu) : -1);
    }
    return out;
  }
  // A whole GPU belongs to one pod: the memory its processes hold is the device's used memory
  // (per-process lists need a struct layout that changed across drivers; the device's total
  // does not). Shared GPUs (gpu_milli < 1000) report the sum of their pods.
  std::optional<PodGpuSample> pod_sample(const std::vector<int32_t>& gpus,
                                         const std::string& use_file) override {
    (void)use_file;
    std::lock_guard lock(mu_);
    PodGpuSample out;
    int64_t util_sum = 0, util_n = 0, mem_n = 0;
    for (int32_t g : gpus) {
      if (g < 0 || static_cast<size_t>(g) >= devices_.size()) continue;
      nvmlMemory_t mem{};
      if (api_.get_memory(devices_[static_cast<size_t>(g)], &mem) == kNvmlSuccess) {
        out.used_mib = std::max(out.used_mib, static_cast<int64_t>(mem.used / (1024 * 1024)));
        ++mem_n;
      }
      nvmlUtilization_t u{};
      if (api_.get_utilization &&
          api_.get_utilization(devices_[static_cast<size_t>(g)], &u) == kNvmlSuccess) {
        util_sum += u.gpu;
        ++util_n;
      }
    }
    if (mem_n == 0) return std::nullopt;
    out.util_pct = util_n ? static_cast<int32_t>(util_sum / util_n) : 0;
    return out;
  }

 private:
  NvmlApi api_;
  std::vector<nvmlDevice_t> devices_;
  std::vector<proto::AgentGpu> gpus_;
  std::mutex mu_;
};

void load_symbols(NvmlApi& api) {
  load(api.handle, "nvmlInit_v2", api.init);
  load(api.handle, "nvmlShutdown", api.shutdown);
  load(api.handle, "nvmlErrorString", api.error_string);
  load(api.handle, "nvmlDeviceGetCount_v2", api.get_count);
  load(api.handle, "nvmlDeviceGetHandleByIndex_v2", api.get_handle);
  load(api.handle, "nvmlDeviceGetName", api.get_name);
  load(api.handle, "nvmlDeviceGetMemoryInfo", api.get_memory);
  load(api.handle, "nvmlDeviceGetUUID", api.get_uuid);
  load(api.handle, "nvmlDeviceGetMigMode", api.get_mig_mode);
  load(api.handle, "nvmlDeviceGetPciInfo_v3", api.get_pci);
  load(api.handle, "nvmlDeviceGetP2PStatus", api.get_p2p);
  load(api.handle, "nvmlDeviceGetNvLinkState", api.get_link_state);
  load(api.handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.get_link_remote_pci);
  load(api.handle, "nvmlDeviceGetUtilizationRates", api.get_utilization);
}

// NVLink peers. P2P status covers NVSwitch systems (where a link's remote end is the
// switch, not the peer GPU); the per-link remote PCI id is the fallback for old drivers.
void nvlink_peers(const NvmlApi& api, const std::vector<nvmlDevice_t>& devices,
                  const std::vector<std::string>& bus_ids, std::vector<proto::AgentGpu>& gpus) {
  const size_t count = devices.size();
  for (unsigned i = 0; i < count; ++i) {
    for (unsigned j = 0; j < count; ++j) {
      if (i == j) continue;
      bool linked = false;
      int status = -1;
      if (api.get_p2p &&
          api.get_p2p(devices[i], devices[j], kP2pCapsNvlink, &status) == kNvmlSuccess) {
        linked = status == kP2pStatusOk;
      } else if (api.get_link_state && api.get_link_remote_pci && !bus_ids[j].empty()) {
        for (unsigned link = 0; link < kNvmlMaxLinks && !linked; ++link) {
          int active = 0;
          if (api.get_link_state(devices[i], link, &active) != kNvmlSuccess || !active) continue;
          nvmlPciInfo_t remote{};
          if (api.get_link_remote_pci(devices[i], link, &remote) == kNvmlSuccess) {
            linked = sysfs_bus_id(remote.busId) == bus_ids[j];
          }
        }
      }
      if (linked) gpus[i].nvlink_peers.push_back(static_cast<int32_t>(j));
    }
  }
}

}  // namespace

Result<std::unique_ptr<GpuProvider>> make_nvml_provider(const NvmlOptions& opt) {
  // 1. Load the library and the entry points; the ones marked required must exist.
  NvmlApi api;
  api.handle = dlopen(opt.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api.handle) {
    return Error{"NVML not found (" + opt.library +
                 "): no NVIDIA driver on this machine; use --gpus fake:8xH100 to run without GPUs"};
  }
  load_symbols(api);
  if (!api.init || !api.get_count || !api.get_handle || !api.get_name || !api.get_memory) {
    return Error{"NVML (" + opt.library +
                 ") lacks nvmlInit_v2/nvmlDeviceGetCount_v2/... : driver too old"};
  }
  if (nvmlReturn_t r = api.init(); r != kNvmlSuccess) {
    return Error{"NVML init failed: " + api.err(r) + " (is the NVIDIA driver loaded?)"};
  }
  auto fail = [&](std::string msg) -> Result<std::unique_ptr<GpuProvider>> {
    if (api.shutdown) api.shutdown();
    return Error{std::move(msg)};
  };
  unsigned count = 0;
  if (nvmlReturn_t r = api.get_count(&count); r != kNvmlSuccess) {
    return fail("nvmlDeviceGetCount_v2: " + api.err(r));
  }
  // 2. Per device: name, memory, uuid, MIG mode, PCI bus id -> NUMA node from sysfs.
  std::vector<nvmlDevice_t> devices(count, nullptr);
  std::vector<proto::AgentGpu> gpus(count);
  std::vector<std::string> bus_ids(count);
  for (unsigned i = 0; i < count; ++i) {
    if (nvmlReturn_t r = api.get_handle(i, &devices[i]); r != kNvmlSuccess) {
      return fail("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + "): " + api.err(r));
    }
    auto& g = gpus[i];
    g.index = static_cast<int32_t>(i);
    char buf[kNvmlBufferSize] = {};
    if (nvmlReturn_t r = api.get_name(devices[i], buf, sizeof buf); r != kNvmlSuccess) {
      return fail("nvmlDeviceGetName(" + std::to_string(i) + "): " + api.err(r));
    }
    g.model = normalize_model(buf);
    nvmlMemory_t mem{};
    if (nvmlReturn_t r = api.get_memory(devices[i], &mem); r != kNvmlSuccess) {
      return fail("nvmlDeviceGetMemoryInfo(" + std::to_string(i) + "): " + api.err(r));
    }
    g.memory_mib = static_cast<int64_t>(mem.total / (1024 * 1024));
    char uuid[kNvmlBufferSize] = {};
    if (api.get_uuid && api.get_uuid(devices[i], uuid, sizeof uuid) == kNvmlSuccess) g.uuid = uuid;
    unsigned current = 0, pending = 0;
    // NOT_SUPPORTED on GPUs without MIG: that is "off".
    if (api.get_mig_mode && api.get_mig_mode(devices[i], &current, &pending) == kNvmlSuccess) {
      g.mig = current == kMigEnabled;
    }
    nvmlPciInfo_t pci{};
    if (api.get_pci && api.get_pci(devices[i], &pci) == kNvmlSuccess) {
      bus_ids[i] = sysfs_bus_id(pci.busId);
      std::ifstream numa(opt.sysfs_pci + "/" + bus_ids[i] + "/numa_node");
      int node = -1;
      // -1 means "no NUMA information" (single-socket machines): report node 0.
      if (numa >> node && node >= 0) g.numa_node = node;
    }
  }
  // 3. NVLink peers (nvlink_peers()).
  nvlink_peers(api, devices, bus_ids, gpus);
  return std::unique_ptr<GpuProvider>(
      std::make_unique<NvmlGpuProvider>(api, std::move(devices), std::move(gpus)));
}

}  // namespace sluice::agent
