#pragma once
// Jobs and admissions as JSON, for the durable store and the API. Everything that refers to the
// configuration (resources, flavors, queues, nodes) is written by name, so a stored job survives
// a configuration reload or a restart with a reordered config: decoding maps names back to the
// ids of the configuration in force, and says which name no longer exists.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/decision/decisions.h"
#include "core/model/config.h"
#include "core/model/job.h"
#include "core/model/result.h"

namespace sluice::server {

nlohmann::json encode_job(const Job& job, const Config& config);
// A job's record in two steps, so that the costly part runs before the server's state lock is
// taken: the body holds every field but those assigned at submission (id, name, submit_ns),
// and job_json_with() completes it with them. decode_job() reads the result like encode_job's.
std::string encode_job_body(const Job& job, const Config& config);
std::string job_json_with(const Job& job, std::string_view body);
Result<Job> decode_job(const nlohmann::json& j, const Config& config);
// Stored times read back (a record can be damaged on disk or written by hand): the first field
// outside the bounds the API puts on input, as "<field> is outside [0, 2200-01-01]" (time
// points) or "... [0, 10 years]" (durations); none: nullopt.
using TimeFields = std::initializer_list<std::pair<const char*, TimeNs>>;
std::optional<std::string> time_out_of_bounds(TimeFields points, TimeFields durations = {});

// A JSON object (text): decode_admission(nlohmann::json::parse(text)) reads it back.
std::string encode_admission(const Admission& a, const Config& config);
Result<Admission> decode_admission(const nlohmann::json& j, const Config& config);

// GPUs of a job in milli-GPU, what its GPU-seconds are charged by: whole GPUs x 1000 plus
// fractions, and a MIG slice as its share of the GPU's 7 compute slices ("3g.40gb": 3/7).
int64_t job_gpu_milli(const Job& job, const Config& config);

}  // namespace sluice::server
