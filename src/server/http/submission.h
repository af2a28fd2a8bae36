#pragma once
// A job submission between its parse and its commit (http/jobs.cc), shared by POST /v1/jobs
// and the Kubernetes API's POST of a batch/v1 Job (http/kube_batch.cc).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/loader.h"
#include "server/run_as.h"
#include "server/server.h"

namespace sluice::server {

// A submission between its parse (outside the state lock) and its commit.
struct Server::Submission {
  Caller caller;
  ClaimedUser claimed;
  std::shared_ptr<const Config> config;  // the configuration it was parsed against
  JobsOutput parsed;
  // The Kubernetes API's (kube_batch.cc): the namespace of documents that name none ("": the
  // caller's implied one), and a name taken by an unfinished job in its namespace refused
  // (409) in the same hold of the state lock that submits.
  std::string default_namespace;
  bool unique_names = false;
  std::string kube_meta;  // the created Job's own metadata (kube_meta.h); "" none
};

// A submission admitted into the state, waiting for its commit (http/jobs.cc).
struct Server::Admitted {
  std::vector<JobId> ids;
  uint64_t ticket = 0;  // the store's; 0: nothing to wait for
  nlohmann::json body;  // the 202 answer
};

}  // namespace sluice::server
