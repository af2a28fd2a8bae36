#pragma once
// A job's shape: everything that decides whether it can be placed (pod sets, devices, models,
// topology), not who it is. Two jobs of the same shape fit exactly the same places, which the
// scheduler uses to intern pending jobs and to memoise placement failures within a cycle.
#include <cstdint>

#include "core/model/job.h"

namespace sluice {

// A hash of the shape (equal shapes hash equal; compare with same_shape()).
uint64_t shape_hash(const Job& job);
bool same_shape(const Job& a, const Job& b);

}  // namespace sluice
