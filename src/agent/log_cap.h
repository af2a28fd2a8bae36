#pragma once
// A pod's log is bounded (issue 35: one pod wrote 3.2 GB in 20 s and the next tenant's job on
// the node failed with an empty log). The pod writes its log itself, through a descriptor
// opened with O_APPEND, so the agent cannot refuse its bytes; instead the supervisor looks at
// the log's size as it watches the pod (process_runner.h: every tick while the log grows fast,
// else every 10) and, past the cap, cuts it back to its first half and a line that says so.
// The pod's next write lands after that line (O_APPEND), so the log keeps its head and its
// most recent output, and never grows past the cap by more than a tick's worth of output or
// 1/64 of the cap.
#include <cstdint>
#include <string>

namespace sluice::agent {

// Cuts the log at `path` back to max_bytes / 2 plus a marker line when it is larger than
// max_bytes. Returns the bytes dropped (0: nothing to do, or the log is gone). The file is
// opened without following a link (the pod's user owns it). *size (when given): the log's
// size afterwards (0: gone).
int64_t cap_log(const std::string& path, int64_t max_bytes, int64_t* size = nullptr);

}  // namespace sluice::agent
