#pragma once
// examples/demo/{cluster,queues,pool,jobs}.yaml and the pool's provisioner
// (examples/autoscale/local-agents.sh), embedded at build time.
namespace sluice::cli {
extern const char* const kDemoCluster;
extern const char* const kDemoQueues;
extern const char* const kDemoPool;
extern const char* const kDemoProvisioner;
extern const char* const kDemoJobs;
}  // namespace sluice::cli
