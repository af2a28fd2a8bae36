#pragma once
// Reader for `sluice-events`: JSON lines, one event per line, the format the daemon writes
// (docs/simulator.md defines it). A job is rebuilt from its events:
//   {"event":"submit","time":0,"id":7,"queue":"train","namespace":"default",
//    "priority_class":"high","preemptible":false,"pods":1,"gpus":8,"gpu_milli":1000,
//    "cpu_milli":0,"memory_mib":0,"walltime":3600,"name":"llama"}
//   {"event":"start","time":12.5,"id":7}
//   {"event":"preempt","time":100,"id":7}
//   {"event":"end","time":3612.5,"id":7}
// Its true run time is the sum of its running spans (start..preempt, start..end). Lines must
// come in time order. Blank lines and lines starting with '#' are skipped.
#include <string>

#include "sim/trace.h"

namespace sluice::sim {

TraceOutput read_sluice_events(const std::string& name, const std::string& text);

}  // namespace sluice::sim
