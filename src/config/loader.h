#pragma once
// The configuration loader: Kueue's manifests (ResourceFlavor, ClusterQueue, LocalQueue,
// WorkloadPriorityClass, Cohort), sluice's own kinds (Cluster, SchedulerPolicy, Job), Kubernetes
// Pods and batch/v1 Jobs, and the kube-batch style `Queue` users copy from playbooks.
// Bad input is never thrown or aborted on: every problem is a message of the form
//   file:line: field.path: what is wrong
// collected (up to a bound) in the returned errors. docs/config.md is the reference.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/state/admitted.h"
#include "core/model/config.h"
#include "core/model/job.h"
#include "core/model/result.h"

namespace sluice {

struct Source {
  std::string name;  // used in messages (the file path as the user gave it)
  std::string text;
};

// Reads a whole file; the error names the path and the reason.
Result<Source> read_source(const std::string& path);

struct LoadOptions {
  bool strict = false;                    // every warning is also an error
  std::vector<std::string> ignore_kinds;  // kinds skipped silently (e.g. "Deployment")
};

struct LoadOutput {
  Config config;          // validated; config.warnings filled
  std::vector<Job> jobs;  // Job / Pod / batch/v1 Job documents found in the sources
  std::map<JobId, AdmittedStatus> admitted;  // jobs with a status.admission (admitted.h)
  std::optional<TimeNs> snapshot_ns;         // the time of a Snapshot document, if any
  std::vector<std::string> errors;           // empty on success
  std::vector<std::string> notes;  // informational (ignored Pod fields, ...); never errors
  bool ok() const { return errors.empty(); }
};

// Parses every YAML document of every source into one Config, validates cross references, then
// resolves the job documents against it. With options.strict every warning is also an error.
LoadOutput load(const std::vector<Source>& sources, const LoadOptions& options);

// Parses job submissions only (sluice Job, v1 Pod, batch/v1 Job, JobSet, PyTorchJob, MPIJob;
// JSON is YAML, so JSON works
// too) against an already loaded config. Ids are 1, 2, 3... in document order unless given.
// A body of JSON objects (one, or one per `---` document) takes a faster parser with the same
// result; whenever that would say anything, the YAML path reads the body again (parse_jobs.h).
struct JobsOutput {
  std::vector<Job> jobs;
  std::vector<std::string> errors;
  std::vector<std::string> notes;     // ignored fields, built-in priority classes used, ...
  std::vector<std::string> warnings;  // of the notes, those that may keep a job from running
  bool too_large = false;             // refused by a size limit (input_limits.h): HTTP 413
  bool unknown_queue = false;         // every error is a named LocalQueue not found: HTTP 404
};
// name_seed: where metadata.generateName suffixes come from (the server passes its clock).
// default_namespace: a job's namespace when its document names none (the server passes a
// member token's one namespace).
JobsOutput parse_jobs(const Source& source, const Config& config, uint64_t name_seed = 0,
                      const std::string& default_namespace = "default");

// Human summary for `sluice check`: cluster, flavors, cohorts, queues and quotas.
std::string summarize(const Config& config);

// Durations: "1h", "30m", "90s", "1h30m", "250ms", "1.5h", "2d", or a plain number of seconds.
// nullopt when not a duration, negative, or out of range.
std::optional<TimeNs> parse_duration_ns(std::string_view text);

}  // namespace sluice
