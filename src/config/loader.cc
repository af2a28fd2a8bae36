// load() and parse_jobs(): YAML text to documents, documents to kinds, the three stages, strict
// mode. yaml-cpp throws on malformed input; every exception is caught here and becomes an error.
#include "config/loader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/input_limits.h"
#include "config/internal.h"
#include "config/json_documents.h"
#include "config/parse_jobs.h"
#include "config/yaml_documents.h"

namespace sluice {

namespace cd = config_detail;

namespace {

// Every YAML document of a source; false after reporting malformed YAML.
// Limits (input_limits.h) are checked before (documents) and after (the expanded trees)
// parsing; *too_large says a size limit was hit.
bool parse_yaml(const Source& source, cd::Sink& sink, std::vector<YAML::Node>* docs,
                const InputLimits& limits, bool* too_large = nullptr) {
  auto violated = [&](const LimitViolation& v) {
    sink.error(cd::format(cd::Where{source.name, v.line}, "", v.message));
    if (too_large) *too_large = v.too_large;
    docs->clear();
    return false;
  };
  try {
    if (auto v = check_text(source.text, limits)) return violated(*v);
    *docs = cd::load_all_documents(source.text, max_parser_events(limits));
    InputBudget budget;
    for (const YAML::Node& doc : *docs)
      if (auto v = check_document(doc, limits, budget)) return violated(*v);
    return true;
  } catch (const YAML::Exception& e) {
    int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    sink.error(cd::format(cd::Where{source.name, line}, "", "malformed YAML: " + e.msg));
  } catch (const std::exception& e) {
    sink.error(
        cd::format(cd::Where{source.name, 0}, "", std::string("malformed YAML: ") + e.what()));
  }
  return false;
}

// apiVersion and kind of a document; nullopt after reporting (or for an empty document, which
// is skipped silently: `---` at the end of a file).
struct Header {
  cd::DocKind kind = cd::DocKind::kUnknown;
  std::string kind_name;
  YAML::Node kind_node;
};
std::optional<Header> read_header(cd::Reader& r, const YAML::Node& doc,
                                  const std::vector<std::string>& ignore_kinds) {
  if (doc.IsNull()) return std::nullopt;
  r.set_fallback_line(r.where(doc).line);
  if (!doc.IsMap()) {
    r.error(doc, "", "a document must be a map with apiVersion and kind");
    return std::nullopt;
  }
  // (Copies: yaml-cpp's iterator yields temporaries.)
  std::optional<YAML::Node> api, kind;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    if (it->first.Scalar() == "apiVersion" && !api) api = it->second;
    if (it->first.Scalar() == "kind" && !kind) kind = it->second;
  }
  std::optional<std::string> api_s, kind_s;
  if (!api) {
    r.error(doc, "apiVersion", "required field missing");
  } else {
    api_s = r.str(*api, "apiVersion");
  }
  if (!kind) {
    r.error(doc, "kind", "required field missing");
  } else {
    kind_s = r.str(*kind, "kind");
  }
  if (!api_s || !kind_s) return std::nullopt;
  if (std::find(ignore_kinds.begin(), ignore_kinds.end(), *kind_s) != ignore_kinds.end())
    return std::nullopt;
  std::string field, why;
  Header h;
  h.kind_name = *kind_s;
  h.kind_node = *kind;
  h.kind = cd::classify(*api_s, *kind_s, &field, &why);
  if (h.kind == cd::DocKind::kUnknown) {
    r.error(field == "kind" ? *kind : *api, field, why);
    return std::nullopt;
  }
  return h;
}

void read_document(cd::Reader& r, const YAML::Node& doc, cd::Builder& b,
                   const LoadOptions& options) {
  auto h = read_header(r, doc, options.ignore_kinds);
  if (!h) return;
  switch (h->kind) {
    case cd::DocKind::kResourceFlavor:
      return cd::read_resource_flavor(r, doc, b);
    case cd::DocKind::kClusterQueue:
      return cd::read_cluster_queue(r, doc, b);
    case cd::DocKind::kLocalQueue:
      return cd::read_local_queue(r, doc, b);
    case cd::DocKind::kWorkloadPriorityClass:
      return cd::read_priority_class(r, doc, b);
    case cd::DocKind::kCohort:
      return cd::read_cohort(r, doc, b);
    case cd::DocKind::kTopology:
      return cd::read_topology(r, doc, b);
    case cd::DocKind::kBatchQueue:
      return cd::read_batch_queue(r, doc, b);
    case cd::DocKind::kCluster:
      return cd::read_cluster(r, doc, b);
    case cd::DocKind::kSchedulerPolicy:
      return cd::read_policy(r, doc, b);
    case cd::DocKind::kBudget:
      return cd::read_budget(r, doc, b);
    case cd::DocKind::kNodePool:
      return cd::read_node_pool(r, doc, b);
    case cd::DocKind::kSnapshot:
      return cd::read_snapshot(r, doc, b);
    case cd::DocKind::kSluiceJob:
    case cd::DocKind::kPod:
    case cd::DocKind::kBatchJob:
    case cd::DocKind::kJobSet:
    case cd::DocKind::kPyTorchJob:
    case cd::DocKind::kMpiJob:
      b.jobs.push_back(cd::JobDoc{r.file(), doc, h->kind});
      return;
    case cd::DocKind::kIgnored:
      return r.warning(h->kind_node, "kind",
                       h->kind_name +
                           ": sluice has no admission checks (it admits on quota and capacity "
                           "alone); this document is ignored, and so are ClusterQueues' "
                           "admissionChecks (docs/kueue-conformance.md)");
    case cd::DocKind::kUnknown:
      return;
  }
}

void internal_error(cd::Sink& sink, const std::string& where, const char* what) {
  sink.error(where + ": internal error while reading: " + what);
}

// The items of a list document (the document itself when it is a sequence); nullopt when it is
// not a list. A Kubernetes `kind: List` with `items` is what `kubectl get -o yaml` writes.
std::optional<YAML::Node> list_items(const YAML::Node& doc) {
  if (doc.IsSequence()) return doc;
  if (!doc.IsMap()) return std::nullopt;
  const YAML::Node kind = doc["kind"];
  if (!kind || !kind.IsScalar() || kind.Scalar() != "List") return std::nullopt;
  const YAML::Node items = doc["items"];
  return items ? items : YAML::Node(YAML::NodeType::Sequence);
}

// A document, or each document of a list (not nested), read into the builder.
void read_listed(cd::Reader& r, const YAML::Node& doc, cd::Builder& b, const LoadOptions& options) {
  const auto list = list_items(doc);
  if (!list) return read_document(r, doc, b, options);
  if (!list->IsSequence()) return r.error(*list, "items", "must be a list of documents");
  for (const YAML::Node& item : *list) {
    if (r.sink().full()) return;
    if (list_items(item)) return r.error(item, "", "a list inside a list: give one list");
    read_document(r, item, b, options);
  }
}

}  // namespace

Result<Source> read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot read: " + std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{path + ": cannot read: " + std::strerror(errno)};
  return Source{path, text.str()};
}

LoadOutput load(const std::vector<Source>& sources, const LoadOptions& options) {
  cd::Sink sink;
  cd::Builder b;
  // 1. Every document of every source.
  for (const Source& source : sources) {
    std::vector<YAML::Node> docs;
    if (!parse_yaml(source, sink, &docs, config_limits())) continue;
    cd::Reader r(source.name, sink);
    for (const YAML::Node& doc : docs) {
      if (sink.full()) break;
      try {
        read_listed(r, doc, b, options);
      } catch (const std::exception& e) {
        internal_error(sink, r.where(doc).str(), e.what());
      }
    }
  }
  // 2. Cross references.
  try {
    cd::resolve(b, sink);
  } catch (const std::exception& e) {
    internal_error(sink, "configuration", e.what());
  }
  // 3. Jobs against the resolved config.
  LoadOutput out;
  std::vector<cd::ReadJob> read;
  cd::JobContext ctx{b.config, {}, {}};
  for (const cd::JobDoc& jd : b.jobs) {
    if (sink.full()) break;
    cd::Reader r(jd.file, sink);
    try {
      if (auto job = cd::read_job(r, jd.doc, jd.kind, ctx)) read.push_back(std::move(*job));
    } catch (const std::exception& e) {
      internal_error(sink, r.where(jd.doc).str(), e.what());
    }
  }
  cd::merge_pod_groups(read, sink);
  std::vector<std::optional<AdmittedStatus>> admitted;  // parallel to out.jobs
  for (auto& rj : read) admitted.push_back(std::move(rj.admitted));
  std::vector<cd::Where> job_where;
  cd::split_read_jobs(read, out.jobs, job_where);
  cd::assign_job_ids(out.jobs, job_where, sink);
  for (size_t i = 0; i < admitted.size(); ++i)
    if (admitted[i]) out.admitted.emplace(out.jobs[i].id, std::move(*admitted[i]));
  out.snapshot_ns = b.snapshot_ns;
  // Built-in priority classes the jobs used become part of the config (the warning was issued).
  for (const auto& [name, value] : ctx.builtin_priorities)
    if (!b.config.find_priority_class(name)) b.config.priority_classes.push_back({name, value});
  // 4. Strict: warnings are errors too.
  if (options.strict)
    for (const auto& w : sink.warnings) sink.error(w + " (strict)");
  sink.finish();
  out.config = std::move(b.config);
  out.config.warnings = std::move(sink.warnings);
  out.errors = std::move(sink.errors);
  out.notes = std::move(sink.notes);
  return out;
}

namespace {

// Job documents read one at a time against a config, for both of parse_jobs' paths.
class JobDocuments {
 public:
  JobDocuments(const std::string& file, const Config& config, uint64_t name_seed,
               const std::string& default_namespace)
      : r_(file, sink_), ctx_{config, {}, {}, name_seed} {
    ctx_.default_namespace = default_namespace;
  }

  bool full() { return sink_.full(); }
  bool said_anything() const {
    return !sink_.errors.empty() || !sink_.warnings.empty() || !sink_.notes.empty();
  }

  // A document is a job, or a list of them: a YAML/JSON sequence of job documents, or a
  // Kubernetes `kind: List` with `items` (what `kubectl get -o yaml` writes). Not nested.
  void read(const YAML::Node& doc, bool in_list = false) {
    try {
      if (const auto list = list_items(doc)) {
        const YAML::Node& items = *list;
        if (in_list) {
          r_.error(doc, "", "a list inside a list: give the jobs in one list");
          return;
        }
        if (!items.IsSequence()) {
          r_.error(items, "items", "must be a list of job documents");
          return;
        }
        for (const YAML::Node& item : items) {
          if (full()) return;
          read(item, true);
        }
        return;
      }
      auto h = read_header(r_, doc, {});
      if (!h) return;
      if (!cd::is_job_kind(h->kind)) {
        r_.error(h->kind_node, "kind",
                 h->kind_name +
                     " is configuration, not a job (expected a sluice.dev/v1alpha1 Job, v1 "
                     "Pod, batch/v1 Job, JobSet, PyTorchJob or MPIJob)");
        return;
      }
      auto job = cd::read_job(r_, doc, h->kind, ctx_);
      if (job && job->admitted) {
        r_.error(doc["status"], "status.admission",
                 "a submission cannot say where it runs (admitted state is input to `sluice "
                 "plan`)");
      } else if (job) {
        read_.push_back(std::move(*job));
      }
    } catch (const std::exception& e) {
      internal_error(sink_, r_.where(doc).str(), e.what());
    }
  }

  JobsOutput finish() {
    cd::merge_pod_groups(read_, sink_);
    cd::split_read_jobs(read_, out_.jobs, where_);
    cd::assign_job_ids(out_.jobs, where_, sink_);
    sink_.finish();
    out_.errors = std::move(sink_.errors);
    out_.unknown_queue = ctx_.unknown_queues > 0 && out_.errors.size() == ctx_.unknown_queues;
    out_.notes = std::move(sink_.notes);
    out_.warnings = sink_.warnings;
    for (auto& w : sink_.warnings) out_.notes.push_back(std::move(w));
    return std::move(out_);
  }

 private:
  cd::Sink sink_;
  cd::Reader r_;
  cd::JobContext ctx_;
  std::vector<cd::ReadJob> read_;
  std::vector<cd::Where> where_;
  JobsOutput out_;
};

}  // namespace

namespace config_detail {

JobsOutput read_job_documents(const std::string& file, const std::vector<YAML::Node>& docs,
                              const Config& config, uint64_t name_seed,
                              const std::string& default_namespace) {
  JobDocuments jobs(file, config, name_seed, default_namespace);
  for (const YAML::Node& doc : docs) {
    if (jobs.full()) break;
    jobs.read(doc);
  }
  return jobs.finish();
}

JobsOutput parse_jobs_yaml(const Source& source, const Config& config, uint64_t name_seed,
                           const std::string& default_namespace) {
  Sink sink;
  std::vector<YAML::Node> docs;
  bool too_large = false;
  if (parse_yaml(source, sink, &docs, submission_limits(), &too_large))
    return read_job_documents(source.name, docs, config, name_seed, default_namespace);
  sink.finish();
  JobsOutput out;
  out.errors = std::move(sink.errors);
  out.too_large = too_large;
  return out;
}

std::optional<JobsOutput> parse_jobs_json(const Source& source, const Config& config,
                                          uint64_t name_seed,
                                          const std::string& default_namespace) {
  // Messages from nodes without marks would lack their line: at the first one, stop; the YAML
  // path says them instead.
  // Limits too: a violation is said by the YAML path, with its line.
  const InputLimits limits = submission_limits();
  if (check_text(source.text, limits)) return std::nullopt;
  InputBudget budget;
  bool within = true;
  JobDocuments jobs(source.name, config, name_seed, default_namespace);
  const bool read = for_each_json_document(source.text, [&](const YAML::Node& doc) {
    within = !check_document(doc, limits, budget);
    if (within) jobs.read(doc);
    return within && !jobs.said_anything();
  });
  if (!read || !within || jobs.said_anything()) return std::nullopt;
  JobsOutput out = jobs.finish();
  if (!out.errors.empty() || !out.notes.empty()) return std::nullopt;  // from assign_job_ids
  return out;
}

}  // namespace config_detail

JobsOutput parse_jobs(const Source& source, const Config& config, uint64_t name_seed,
                      const std::string& default_namespace) {
  if (auto out = cd::parse_jobs_json(source, config, name_seed, default_namespace))
    return std::move(*out);
  return cd::parse_jobs_yaml(source, config, name_seed, default_namespace);
}

}  // namespace sluice
