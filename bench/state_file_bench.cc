// state_file_bench: the agent's StateFile::save (pods.json, exits.json, lease.json: a few saves
// per pod) against the save it replaced, in the same process on the same filesystem: that one
// truncated the older slot to zero and wrote it whole (open with O_TRUNC, write, close), which on
// ext4 frees the slot's blocks and makes close() start writeback (auto_da_alloc); StateFile now
// overwrites the slot in place with a hashed text (src/agent/state_file.h). Each round saves a
// document like a busy agent's pods.json (--pods entries) --saves times with each, alternating
// which goes first, each in a fresh directory, and prints CPU and wall time per save and the
// ratio of the medians.
//
//   build/bench/state_file_bench [--dir D] [--saves N] [--rounds R] [--pods P]
//
// D (default $TMPDIR or /tmp) decides the filesystem measured: ext4 and tmpfs differ most.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/state_file.h"

namespace {

using sluice::agent::StateFile;
namespace fs = std::filesystem;

// The save StateFile replaced: the older slot truncated and written whole.
bool truncating_save(const std::string& path, uint64_t seq, const nlohmann::json& doc) {
  const std::string p = path + "." + std::to_string(seq % 2);
  const std::string text = "{\"doc\":" + doc.dump() + ",\"seq\":" + std::to_string(seq) + "}\n";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

double cpu_us() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

struct Timing {
  double cpu_us = 0, wall_us = 0;  // per save
};

// `saves` saves of a pods.json of `pods` entries in a fresh directory under `base`.
Timing run(const std::string& base, bool truncating, int saves, int pods) {
  const fs::path dir = fs::path(base) / ("state_file_bench." + std::to_string(::getpid()) +
                                         (truncating ? ".old" : ".new"));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "pods.json").string();
  nlohmann::json list = nlohmann::json::array();
  for (int k = 0; k < pods; ++k)
    list.push_back({{"job", 100000 + k},
                    {"pod", 0},
                    {"run", 1},
                    {"pid", 40000 + k},
                    {"start_ticks", 123456789},
                    {"gpus", {k % 8}},
                    {"exit_reason", ""}});
  StateFile file(path);
  std::string why;
  const double c0 = cpu_us();
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < saves; ++i) {
    list[static_cast<size_t>(i % pods)]["pid"] = i;  // a pod ended, another started
    const nlohmann::json doc = {{"version", 1}, {"pods", list}};
    const bool ok = truncating ? truncating_save(path, static_cast<uint64_t>(i) + 1, doc)
                               : file.save(doc, &why);
    if (!ok) {
      std::fprintf(stderr, "state_file_bench: save failed in %s: %s\n", dir.c_str(),
                   why.empty() ? std::strerror(errno) : why.c_str());
      std::exit(1);
    }
  }
  const double wall =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - w0).count();
  const Timing t{(cpu_us() - c0) / saves, wall / saves};
  fs::remove_all(dir);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  int saves = 5000, rounds = 3, pods = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--dir")
      dir = argv[i + 1];
    else if (a == "--saves")
      saves = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rounds")
      rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--pods")
      pods = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr,
                   "usage: state_file_bench [--dir D] [--saves N] [--rounds R] [--pods P]\n");
      return 2;
    }
  }
  std::vector<double> old_cpu, new_cpu, old_wall, new_wall;
  for (int r = 0; r < rounds; ++r)
    for (int k = 0; k < 2; ++k) {
      const bool truncating = (r + k) % 2 == 0;
      const Timing t = run(dir, truncating, saves, pods);
      (truncating ? old_cpu : new_cpu).push_back(t.cpu_us);
      (truncating ? old_wall : new_wall).push_back(t.wall_us);
      std::printf("round %d %-22s %7.1f us CPU, %7.1f us wall per save\n", r + 1,
                  truncating ? "truncate and rewrite:" : "StateFile::save:", t.cpu_us, t.wall_us);
    }
  std::printf(
      "%s, %d saves of %d pods x %d rounds: CPU %.1f -> %.1f us per save (%.2fx), wall "
      "%.1f -> %.1f us (%.2fx)\n",
      dir.c_str(), saves, pods, rounds, median(old_cpu), median(new_cpu),
      median(new_cpu) / median(old_cpu), median(old_wall), median(new_wall),
      median(new_wall) / median(old_wall));
}
