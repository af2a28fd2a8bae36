// What `sluice up` prints while it runs (up_status.h).
#include "cli/up_status.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace sluice::cli {

using nlohmann::json;

UpStatus::UpStatus(const std::string& url)
    : cli_(url, {.read_timeout = std::chrono::seconds(30)}),
      t0_(std::chrono::steady_clock::now()) {}

double UpStatus::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void UpStatus::print_if_changed() {
  auto r = cli_.get("/v1/jobs?limit=1000");
  if (!r || r->status != 200) return;
  std::map<std::string, int> by_state;
  int preemptions = 0;
  const json body = json::parse(r->body, nullptr, false);
  if (body.is_discarded()) return;
  for (const auto& j : body["jobs"]) {
    by_state[j["state"].get<std::string>()]++;
    preemptions += j["preemptions"].get<int>();
  }
  std::string line;
  for (const auto& [s, n] : by_state) line += " " + s + "=" + std::to_string(n);
  line += " preemptions=" + std::to_string(preemptions);
  if (line == last_) return;
  last_ = line;
  std::printf("[%5.1fs]%s\n", elapsed(), line.c_str());
  std::fflush(stdout);
}

void UpStatus::print_jobs_table() {
  auto r = cli_.get("/v1/jobs?limit=1000");
  if (!r || r->status != 200) return;
  const json body = json::parse(r->body, nullptr, false);
  if (body.is_discarded()) return;
  const json& jobs = body["jobs"];
  std::printf("\n%-4s %-10s %-9s %-12s %-10s %-5s %-6s %s\n", "ID", "NAME", "NAMESPACE", "QUEUE",
              "STATE", "GPUS", "PREEMPT", "NODES / REASON");
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    const auto& j = *it;
    std::string where;
    for (const auto& p : j["placement"])
      where += (where.empty() ? "" : ",") + p["node"].get<std::string>();
    if (j["state"] != "running" && !j["reason"].is_null()) where = j["reason"].get<std::string>();
    if (where.size() > 70) where = where.substr(0, 67) + "...";
    std::printf(
        "%-4lld %-10s %-9s %-12s %-10s %-5lld %-6d %s\n",
        static_cast<long long>(j["id"].get<int64_t>()), j["name"].get<std::string>().c_str(),
        j["namespace"].get<std::string>().c_str(), j["cluster_queue"].get<std::string>().c_str(),
        j["state"].get<std::string>().c_str(), static_cast<long long>(j["gpus"].get<int64_t>()),
        j["preemptions"].get<int>(), where.c_str());
  }
  std::fflush(stdout);
}

}  // namespace sluice::cli
