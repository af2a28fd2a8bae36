#pragma once
// Internal to the loader: parse_jobs' two paths (loader.cc), declared for the tests and the
// benchmark that compare them. parse_jobs tries the JSON path and falls back to the YAML path.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"

namespace sluice::config_detail {

// The YAML path: yaml-cpp's documents; every message names file and line.
JobsOutput parse_jobs_yaml(const Source& source, const Config& config, uint64_t name_seed = 0,
                           const std::string& default_namespace = "default");

// The fast path for JSON bodies (json_documents.h). nullopt when the text is not such a body or
// reading it gave any message at all (error, warning, note): built nodes carry no line, so the
// YAML path reads it again and says them with their lines.
std::optional<JobsOutput> parse_jobs_json(const Source& source, const Config& config,
                                          uint64_t name_seed = 0,
                                          const std::string& default_namespace = "default");

// Job documents already parsed, read against `config` (configuration kinds are errors).
JobsOutput read_job_documents(const std::string& file, const std::vector<YAML::Node>& docs,
                              const Config& config, uint64_t name_seed = 0,
                              const std::string& default_namespace = "default");

}  // namespace sluice::config_detail
