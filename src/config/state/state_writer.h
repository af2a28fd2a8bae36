#pragma once
// Writes a cluster's state as the documents `sluice plan` reads (admitted.h): the configuration,
// a Snapshot with the time, and every job as a sluice Job, admitted ones with their
// status.admission. load() of the text gives back the same configuration, jobs and admissions;
// load_state() then rebuilds the same scheduler state (the server's export, GET /v1/state).
#include <string>
#include <vector>

#include "core/decision/decisions.h"
#include "core/model/config.h"
#include "core/model/job.h"

namespace sluice {

struct StateJob {
  const Job* job = nullptr;              // as submitted (its fallback shape not applied)
  const Admission* admission = nullptr;  // nullptr: pending
  TimeNs admitted_ns = 0;
};

// `config_yaml`: the configuration's documents as loaded (kinds in `drop_kinds` are left out,
// e.g. ServerAuth, which holds tokens). Jobs are written in the order given; a job whose
// (namespace, name) was already written gets "#<id>" appended to its name.
std::string write_state(const std::string& config_yaml, const std::vector<std::string>& drop_kinds,
                        const Config& config, const std::vector<StateJob>& jobs, TimeNs now,
                        const std::string& source);

// Seconds as exact decimal text: 12.5, 1712345678.000000001 (what submitTime reads).
std::string seconds_text(TimeNs ns);

}  // namespace sluice
