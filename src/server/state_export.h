#pragma once
// The live state as the documents `sluice plan` reads (GET /v1/state, `sluice snapshot`): the
// configuration in force without its ServerAuth documents (tokens), a Snapshot at `now`, the
// running jobs with their admissions and the pending jobs, as the scheduler holds them.
#include <string>

#include "server/state.h"

namespace sluice::server {

// Call with state.mu() held.
std::string export_state(const ServerState& state, const std::string& config_text, TimeNs now,
                         const std::string& source);

}  // namespace sluice::server
