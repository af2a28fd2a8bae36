// Admission at submission: the LocalQueue lookup, a ClusterQueue's namespaceSelector, and
// malformed jobs. Each refusal says why and leaves nothing behind.
#include <gtest/gtest.h>

#include "../test_config.h"
#include "core/cycle/scheduler.h"

namespace sluice {
namespace {

using testing::add_queue;
using testing::make_cluster;
using testing::make_job;

Job in_namespace(Job j, const std::string& ns) {
  j.namespace_ = ns;
  return j;
}

TEST(Submit, NamespaceSelectorDecidesWhoMayUseAClusterQueue) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  const QueueId q = add_queue(*c, "shared", 8);
  // Every namespace has the LocalQueue (namespace "*"); the ClusterQueue selects only "nlp".
  c->local_queues[0].namespace_ = "*";
  c->cluster_queues[q].namespace_selector =
      NamespaceSelector{false, {{"kubernetes.io/metadata.name", "nlp"}}};
  Scheduler s(c);
  EXPECT_EQ(s.submit(in_namespace(make_job(1, "shared", 1), "nlp")).status,
            SubmitStatus::kAccepted);
  const SubmitResult no = s.submit(in_namespace(make_job(2, "shared", 1), "vision"));
  EXPECT_EQ(no.status, SubmitStatus::kNotSelected);
  EXPECT_EQ(no.message,
            "LocalQueue \"shared\" leads to ClusterQueue \"shared\", whose namespaceSelector "
            "does not select namespace \"vision\"");
  EXPECT_EQ(s.pending_count(), 1u);
  // `{}` and no selector at all select every namespace; another label selects none.
  c->cluster_queues[q].namespace_selector = NamespaceSelector{true, {}};
  EXPECT_EQ(Scheduler(c).submit(in_namespace(make_job(3, "shared", 1), "vision")).status,
            SubmitStatus::kAccepted);
  c->cluster_queues[q].namespace_selector.reset();
  EXPECT_EQ(Scheduler(c).submit(in_namespace(make_job(4, "shared", 1), "vision")).status,
            SubmitStatus::kAccepted);
  c->cluster_queues[q].namespace_selector = NamespaceSelector{false, {{"team", "nlp"}}};
  EXPECT_EQ(Scheduler(c).submit(in_namespace(make_job(5, "shared", 1), "nlp")).status,
            SubmitStatus::kNotSelected);
}

TEST(Submit, UnknownQueuesAndMalformedJobsAreRefused) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  add_queue(*c, "a", 8);
  Scheduler s(c);
  EXPECT_EQ(s.submit(make_job(1, "nope", 1)).status, SubmitStatus::kUnknownQueue);
  Job bad = make_job(2, "a", 1);
  bad.pod_sets[0].requests[kCpu] = -1;
  EXPECT_EQ(s.submit(bad).status, SubmitStatus::kInvalid);
  Job none = make_job(3, "a", 1);
  none.pod_sets.clear();
  EXPECT_EQ(s.submit(none).status, SubmitStatus::kInvalid);
  EXPECT_EQ(s.submit(make_job(4, "a", 1)).status, SubmitStatus::kAccepted);
  EXPECT_EQ(s.submit(make_job(4, "a", 1)).status, SubmitStatus::kDuplicate);
  EXPECT_EQ(s.pending_count(), 1u);
}

// The pending caps of a LocalQueue, a ClusterQueue and the cluster: the first one full refuses
// the job, in words that name it, and keeps nothing.
TEST(Submit, APendingCapNamesTheQueueThatIsFull) {
  auto c = std::make_shared<Config>();
  c->cluster = make_cluster(1, 8);
  const QueueId q = add_queue(*c, "a", 8);
  add_queue(*c, "b", 8);
  c->local_queues[0].max_pending = 1;
  Scheduler s(c);
  EXPECT_EQ(s.submit(make_job(1, "a", 1)).status, SubmitStatus::kAccepted);
  auto r = s.submit(make_job(2, "a", 1));
  EXPECT_EQ(r.status, SubmitStatus::kPendingCap);
  EXPECT_EQ(r.message, "LocalQueue default/a has 1 pending jobs (cap 1); retry later");
  c->local_queues[0].max_pending = 0;
  c->cluster_queues[q].max_pending = 1;
  r = s.submit(make_job(3, "a", 1));
  EXPECT_EQ(r.message, "ClusterQueue a has 1 pending jobs (cap 1); retry later");
  c->policy.max_pending_total = 1;
  r = s.submit(make_job(4, "b", 1));
  EXPECT_EQ(r.status, SubmitStatus::kPendingCap);
  EXPECT_EQ(r.message, "the cluster has 1 pending jobs (cap 1); retry later");
  EXPECT_EQ(s.pending_count(), 1u);
}

}  // namespace
}  // namespace sluice
