#pragma once
// Shared by the fuzz targets: the example configuration the job targets read against, and a
// file in memory for the readers that take a path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "config/loader.h"

namespace sluice::fuzz {

inline std::string bytes(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

inline std::string repo_file(const std::string& rel) {
  std::ifstream in(std::string(SLUICE_SOURCE_DIR) + "/" + rel, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot read %s\n", rel.c_str());
    std::abort();
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// examples/config/cluster.yaml + queues.yaml: the queues, flavors and priority classes the
// example jobs name, so job documents get past name resolution.
inline const Config& example_config() {
  static const Config config = [] {
    LoadOutput out = load({{"cluster.yaml", repo_file("examples/config/cluster.yaml")},
                           {"queues.yaml", repo_file("examples/config/queues.yaml")}},
                          {});
    if (!out.ok()) {
      std::fprintf(stderr, "fuzz: the example configuration does not load: %s\n",
                   out.errors.front().c_str());
      std::abort();
    }
    return out.config;
  }();
  return config;
}

// One memfd per process, rewritten for every input; path() opens it afresh at offset 0.
class MemFile {
 public:
  MemFile() : fd_(memfd_create("fuzz-input", 0)) {
    if (fd_ < 0) std::abort();
  }
  const std::string& write(std::string_view text) {
    if (ftruncate(fd_, 0) != 0 ||
        pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
      std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace sluice::fuzz
