#pragma once
// Predicted start times of pending jobs (`sluice jobs --start`, `sluice explain`; docs/api.md).
// The core's forward replay (core/cycle/predict.h) on a copy of the live state: the copy is
// taken under the state lock, the replay runs outside it, bounded in cycles and wall time, and
// its result is kept for the scheduling cycle it was taken at, so that many callers in one
// cycle share one replay. Callers attach the result only to jobs they may see.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/cycle/predict.h"
#include "server/state.h"

namespace sluice::server {

struct PredictLimits {
  int64_t max_cycles = 20'000;                    // the replay's cycles
  std::chrono::milliseconds budget{1000};         // the replay's wall time
  TimeNs unknown_walltime_ns = 3600 * kNsPerSec;  // a job with no walltime and no default
};

// One replay's result: every pending job of the scheduler at cycle `cycle`.
struct StartPredictions {
  uint64_t cycle = 0;
  TimeNs at_ns = 0;                // when the copy was taken
  TimeNs horizon_ns = 0;           // how far the replay got
  bool bounded = false;            // it stopped at its bound with jobs left
  int64_t cycles = 0;              // replay cycles
  TimeNs unknown_walltime_ns = 0;  // assumed for jobs without a walltime or queue default
  std::unordered_map<JobId, PredictedStart> starts;
};

class StartPredictor {
 public:
  explicit StartPredictor(PredictLimits limits = {}) : limits_(limits) {}

  // The predictions of the state's latest cycle: a cached one, or a replay now (one at a time:
  // callers of the same cycle wait for it and share it). Takes state.mu() itself: call it
  // without holding it.
  std::shared_ptr<const StartPredictions> get(ServerState& state, TimeNs now);

  // The JSON of a record's prediction (JobView "predicted_start"): null for a job that is not
  // pending; {"status": "estimated", "time": unix s, "in_s"} | "never" | "beyond-bound"
  // ("not_before") | "held" (gated: not in the scheduler) | "next-cycle" (newer than the
  // replay), with "assumes" (what the estimate takes for granted).
  static nlohmann::json view(const StartPredictions& p, const JobRecord& r, TimeNs now);
  // A line for `sluice explain` ("\nEstimated start: ..."): the estimate and what it assumes
  // ("" when not pending).
  static std::string explain_line(const StartPredictions& p, const JobRecord& r,
                                  const Config& config, TimeNs now);

 private:
  PredictLimits limits_;
  std::mutex replay_mu_;  // one replay at a time; taken before the state lock, never after
  std::mutex cache_mu_;
  std::shared_ptr<const StartPredictions> cache_;
};

}  // namespace sluice::server
