// A job's execution details kept aside (core/model/shared_box.h, job_exec.h): copies share them
// until one changes them, and a job without any holds none.
#include "core/model/shared_box.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model/job.h"

namespace sluice {
namespace shared_box_test {  // a namespace of its own: the unit tests build in unity batches
namespace {

TEST(SharedBox, EmptyReadsTheDefaultValue) {
  SharedBox<std::string> box;
  EXPECT_TRUE(box.empty());
  EXPECT_EQ(box.get(), "");
  box.mut() = "x";
  EXPECT_FALSE(box.empty());
  EXPECT_EQ(box.get(), "x");
}

TEST(SharedBox, CopiesShareUntilOneChanges) {
  SharedBox<std::vector<int>> a;
  a.mut() = {1, 2};
  SharedBox<std::vector<int>> b = a;
  EXPECT_TRUE(a.shared());
  EXPECT_EQ(&a.get(), &b.get());  // one value, not two
  b.mut().push_back(3);           // b gets its own first
  EXPECT_FALSE(a.shared());
  EXPECT_EQ(a.get(), (std::vector<int>{1, 2}));
  EXPECT_EQ(b.get(), (std::vector<int>{1, 2, 3}));
  a.mut().push_back(4);  // the only owner now: changed in place
  EXPECT_EQ(a.get(), (std::vector<int>{1, 2, 4}));
}

TEST(SharedBox, AssignmentAndMoveKeepCountsRight) {
  SharedBox<std::string> a, c;
  a.mut() = "a";
  {
    SharedBox<std::string> b = a;
    c = b;  // three owners
    EXPECT_TRUE(a.shared());
    SharedBox<std::string> d = std::move(b);
    EXPECT_TRUE(b.empty());
    EXPECT_EQ(d.get(), "a");
  }       // b and d gone: a and c remain
  c = c;  // self-assignment keeps it
  EXPECT_EQ(c.get(), "a");
  c = SharedBox<std::string>();
  EXPECT_FALSE(a.shared());
  EXPECT_EQ(a.get(), "a");
}

TEST(JobExec, CopiesOfAJobShareWhatItRunsUntilOneChangesIt) {
  Job j;
  EXPECT_EQ(j.exec().user, "");  // nothing set: the defaults
  EXPECT_EQ(j.exec().run_as_uid, -1);
  j.exec_mut().command = {"python", "train.py"};
  j.exec_mut().user = "alice";
  PodSet ps;
  ps.exec_mut().image = "img:1";
  j.pod_sets.push_back(ps);
  Job copy = j;
  EXPECT_EQ(&copy.exec(), &j.exec());
  EXPECT_EQ(&copy.pod_sets[0].exec(), &j.pod_sets[0].exec());
  copy.exec_mut().user = "bob";
  copy.pod_sets[0].exec_mut().image = "img:2";
  EXPECT_EQ(j.exec().user, "alice");
  EXPECT_EQ(j.pod_sets[0].exec().image, "img:1");
  EXPECT_EQ(copy.exec().command, j.exec().command);
  EXPECT_EQ(copy.exec().user, "bob");
  EXPECT_EQ(copy.pod_sets[0].exec().image, "img:2");
}

}  // namespace
}  // namespace shared_box_test
}  // namespace sluice
