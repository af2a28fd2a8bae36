#pragma once
// examples/demo/{cluster,queues,jobs}.yaml, embedded at build time.
namespace sluice::cli {
extern const char* const kDemoCluster;
extern const char* const kDemoQueues;
extern const char* const kDemoJobs;
}  // namespace sluice::cli
