// A job state as a filter names it (`?state=`, `sluice jobs -t`): sluice's names, or Slurm's
// codes and names in any case.
#include <gtest/gtest.h>

#include "server/state.h"

namespace sluice::server {
namespace state_names_test {

TEST(StateFilter, SluiceAndSlurmNamesInAnyCase) {
  EXPECT_EQ(parse_state_filter("pending"), JobState::kPending);
  EXPECT_EQ(parse_state_filter("PD"), JobState::kPending);
  EXPECT_EQ(parse_state_filter("Pending"), JobState::kPending);
  EXPECT_EQ(parse_state_filter("r"), JobState::kRunning);
  EXPECT_EQ(parse_state_filter("CD"), JobState::kSucceeded);
  EXPECT_EQ(parse_state_filter("COMPLETED"), JobState::kSucceeded);
  EXPECT_EQ(parse_state_filter("F"), JobState::kFailed);
  EXPECT_EQ(parse_state_filter("TO"), JobState::kFailed);  // a walltime kill fails the job
  EXPECT_EQ(parse_state_filter("ca"), JobState::kCancelled);
  EXPECT_EQ(parse_state_filter("rejected"), JobState::kRejected);
  EXPECT_FALSE(parse_state_filter("XX"));
  EXPECT_FALSE(parse_state_filter(""));
  // The store's own reader stays strict: only sluice's names.
  EXPECT_FALSE(parse_state("PD"));
}

}  // namespace state_names_test
}  // namespace sluice::server
