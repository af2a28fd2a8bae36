#pragma once
// Resources are integers in a canonical unit per resource (house rule 4):
//   nvidia.com/gpu  milli-GPU (1000 = one whole GPU; less = a fraction of one shared GPU)
//   cpu             milli-CPU
//   memory          MiB (rounded up)
//   anything else   milli-units (a MIG slice "nvidia.com/mig-1g.10gb: 2" is 2000)
// Names are interned into small ids by a ResourceCatalog owned by the Config.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

using ResourceId = uint8_t;
inline constexpr int kMaxResources = 16;
inline constexpr ResourceId kGpu = 0;
inline constexpr ResourceId kCpu = 1;
inline constexpr ResourceId kMemory = 2;
inline constexpr int64_t kMilliPerGpu = 1000;
inline constexpr std::string_view kGpuResourceName = "nvidia.com/gpu";
inline constexpr std::string_view kMigPrefix = "nvidia.com/mig-";

class ResourceVec {
 public:
  int64_t& operator[](ResourceId r) { return v_[r]; }
  int64_t operator[](ResourceId r) const { return v_[r]; }
  ResourceVec& operator+=(const ResourceVec& o) {
    for (int i = 0; i < kMaxResources; ++i) v_[i] += o.v_[i];
    return *this;
  }
  ResourceVec& operator-=(const ResourceVec& o) {
    for (int i = 0; i < kMaxResources; ++i) v_[i] -= o.v_[i];
    return *this;
  }
  ResourceVec scaled(int64_t k) const {
    ResourceVec r = *this;
    for (auto& x : r.v_) x *= k;
    return r;
  }
  // Every component of *this is <= the same component of `cap`.
  bool fits_in(const ResourceVec& cap) const {
    for (int i = 0; i < kMaxResources; ++i)
      if (v_[i] > cap.v_[i]) return false;
    return true;
  }
  bool is_zero() const {
    for (auto x : v_)
      if (x != 0) return false;
    return true;
  }
  bool operator==(const ResourceVec&) const = default;

 private:
  std::array<int64_t, kMaxResources> v_{};
};

// Interns resource names. Ids 0..2 are fixed (gpu, cpu, memory).
class ResourceCatalog {
 public:
  ResourceCatalog() : names_{std::string(kGpuResourceName), "cpu", "memory"} {}
  // Returns the id of `name`, adding it if new; nullopt when kMaxResources are in use.
  std::optional<ResourceId> intern(std::string_view name);
  std::optional<ResourceId> find(std::string_view name) const;
  const std::string& name(ResourceId id) const { return names_[id]; }
  int size() const { return static_cast<int>(names_.size()); }
  bool is_mig(ResourceId id) const { return std::string_view(names_[id]).starts_with(kMigPrefix); }

 private:
  std::vector<std::string> names_;
};

// Kubernetes quantity ("500m", "8", "64Gi", "1.5", "2e3") to milli-units. nullopt when the text
// is not a quantity or overflows int64.
std::optional<int64_t> parse_quantity_milli(std::string_view text);
// Milli-units of a quantity to the canonical unit of `resource` (memory: bytes*1000 -> MiB, up).
int64_t milli_to_canonical(ResourceId resource, int64_t milli);
// Canonical amount to a human string ("8", "500m", "64Gi").
std::string format_canonical(ResourceId resource, int64_t amount);

}  // namespace sluice
