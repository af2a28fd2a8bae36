// A stand-in for libnvidia-ml.so.1 with the entry points the agent loads (src/agent/nvml.cc),
// so the NVML provider runs end to end on machines without a GPU: dlopen, discovery, NVLink
// peers, MIG mode, utilisation sampling. It describes one fixed node:
//   4 x "NVIDIA H100 80GB HBM3", uuids GPU-fake-nvml-0..3, PCI buses 1B, 1C, 3B, 3C;
//   NVLink pairs 0-1 and 2-3 (through P2P status); MIG enabled on GPU 3.
// Environment, read at each call:
//   SLUICE_FAKE_NVML_INIT_FAIL=1   nvmlInit_v2 answers "Driver Not Loaded";
//   SLUICE_FAKE_NVML_UTIL=a,b,c,d  GPU utilisation percent per device ("-": not supported).
// Built only for the tests; never installed.
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
enum { kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kDriverNotLoaded = 9 };
enum { kCount = 4 };

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

struct nvmlDevice_st {
  int index;
};
static nvmlDevice_st devices[kCount] = {{0}, {1}, {2}, {3}};
static const unsigned buses[kCount] = {0x1B, 0x1C, 0x3B, 0x3C};

static int index_of(nvmlDevice_t d) {
  return d && d >= devices && d < devices + kCount ? d->index : -1;
}

nvmlReturn_t nvmlInit_v2() {
  const char* f = getenv("SLUICE_FAKE_NVML_INIT_FAIL");
  return f && strcmp(f, "1") == 0 ? kDriverNotLoaded : kSuccess;
}
nvmlReturn_t nvmlShutdown() {
  return kSuccess;
}
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kInvalidArgument:
      return "Invalid Argument";
    case kNotSupported:
      return "Not Supported";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  if (!count) return kInvalidArgument;
  *count = kCount;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= kCount || !d) return kInvalidArgument;
  *d = &devices[i];
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned len) {
  if (index_of(d) < 0 || !name) return kInvalidArgument;
  snprintf(name, len, "NVIDIA H100 80GB HBM3");
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  if (index_of(d) < 0 || !m) return kInvalidArgument;
  m->total = 81559ULL * 1024 * 1024;
  m->used = 0;
  // SLUICE_FAKE_NVML_USED_MIB: "MIB,MIB,..." per device index (a pod's memory, right-sizing).
  const char* spec = getenv("SLUICE_FAKE_NVML_USED_MIB");
  for (int k = 0; spec && k < index_of(d); ++k) {
    spec = strchr(spec, ',');
    if (spec) ++spec;
  }
  if (spec) m->used = std::strtoull(spec, nullptr, 10) * 1024 * 1024;
  m->free = m->total - m->used;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* uuid, unsigned len) {
  if (index_of(d) < 0 || !uuid) return kInvalidArgument;
  snprintf(uuid, len, "GPU-fake-nvml-%d", index_of(d));
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* current, unsigned* pending) {
  if (index_of(d) < 0 || !current || !pending) return kInvalidArgument;
  *current = *pending = index_of(d) == 3 ? 1 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  if (index_of(d) < 0 || !pci) return kInvalidArgument;
  memset(pci, 0, sizeof *pci);
  pci->bus = buses[index_of(d)];
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", pci->bus);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int caps, int* status) {
  const int i = index_of(a), j = index_of(b);
  if (i < 0 || j < 0 || !status) return kInvalidArgument;
  if (caps != 2) return kNotSupported;  // only NVML_P2P_CAPS_INDEX_NVLINK
  *status = i != j && i / 2 == j / 2 ? 0 : 5;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  const int i = index_of(d);
  if (i < 0 || !u) return kInvalidArgument;
  const char* spec = getenv("SLUICE_FAKE_NVML_UTIL");
  u->gpu = u->memory = 0;
  for (int k = 0; spec && k < i; ++k) {
    spec = strchr(spec, ',');
    if (spec) ++spec;
  }
  if (!spec) return kSuccess;
  if (*spec == '-') return kNotSupported;
  u->gpu = static_cast<unsigned>(std::strtoul(spec, nullptr, 10));
  return kSuccess;
}

}  // extern "C"
