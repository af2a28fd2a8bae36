// A job's deadline (docs/config.md, "Job"): spec.completeBy (RFC 3339) or spec.completeWithin
// (a duration after submission) on a sluice Job; the annotations sluice.dev/complete-by and
// sluice.dev/complete-within on the Kubernetes kinds. One of the two; the scheduler checks the
// time against the submission (core/model/deadline.h).
#include "config/jobs/job_reader.h"
#include "config/loader.h"
#include "core/model/deadline.h"

namespace sluice::config_detail {

namespace {
const char* kCompleteByAnnotation = "sluice.dev/complete-by";
const char* kCompleteWithinAnnotation = "sluice.dev/complete-within";
}  // namespace

// `text` of field `loc` as the deadline: absolute (RFC 3339) or a duration after submission.
void JobReader::deadline(const std::string& text, bool absolute, const Loc& loc) {
  Job& job = d_.job;
  if (job.complete_by_ns != 0 || job.complete_within_ns != 0) {
    return error_at(loc,
                    "give one deadline: completeBy or completeWithin (and its annotation "
                    "form, sluice.dev/complete-by or sluice.dev/complete-within), not both");
  }
  if (absolute) {
    auto t = parse_rfc3339_ns(text);
    if (!t)
      return error_at(loc, quote(text) +
                               " is not an RFC 3339 time between 1970 and 2199 (e.g. "
                               "2026-12-02T18:00:00Z or 2026-12-02T19:00:00+01:00)");
    job.complete_by_ns = *t;
    return;
  }
  if (!text.empty() && text[0] == '-') return error_at(loc, quote(text) + " must not be negative");
  auto d = parse_duration_ns(text);
  if (!d) return error_at(loc, quote(text) + " is not a duration (e.g. 90m, 2h, 1d)");
  if (*d == 0) return error_at(loc, quote(text) + " must be positive");
  if (*d > kMaxDeadlineAheadNs) return error_at(loc, quote(text) + " is more than 10 years");
  job.complete_within_ns = *d;
}

void JobReader::sluice_deadline(MapReader& spec) {
  for (const char* key : {"completeBy", "completeWithin"}) {
    const YAML::Node* n = spec.find(key);
    if (!n) continue;
    const Loc loc{r_.where(*n), spec.path(key)};
    if (!n->IsScalar()) {
      error_at(loc, std::string("must be ") +
                        (key[8] == 'B' ? "an RFC 3339 time" : "a duration (e.g. 2h)"));
      continue;
    }
    deadline(n->Scalar(), key[8] == 'B', loc);
  }
}

void JobReader::deadline_annotations(const Metadata& m, const Loc& annotations_loc) {
  for (const char* key : {kCompleteByAnnotation, kCompleteWithinAnnotation})
    if (const std::string* v = find_label(m.annotations, key))
      deadline(*v, key == kCompleteByAnnotation,
               Loc{annotations_loc.where, child("metadata.annotations", key)});
}

}  // namespace sluice::config_detail
