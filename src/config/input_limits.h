#pragma once
// Bounds on what one body or file may cost before it is read as jobs or configuration (issue
// 13). A YAML text is cheap to send and can be expensive to hold: one anchor referenced by
// 10,000 aliases turns 70 KB into hundreds of MB once every alias is copied into a job, and a
// megabyte of `---` lines is 250,000 documents. So:
//   1. before parsing, the text's documents and separators are counted (check_text), and
//      yaml-cpp's parser runs once over it, counting events up to max_parser_events, before
//      any tree is built (yaml_documents.h);
//   2. after parsing, each document is walked once with aliases expanded, counting nodes and
//      scalar bytes against a budget that stops the walk as soon as it is spent, and checking
//      that every scalar is valid UTF-8 without NUL bytes, every string and list is within
//      its bound and nesting is shallow (check_document).
// A violation is a message naming the field (and line), and whether it is a size limit (HTTP
// 413) or malformed text (HTTP 400). docs/api.md lists the limits.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

struct InputLimits {
  size_t max_documents = 1000;           // YAML documents in one text
  size_t max_nodes = 100'000;            // over all documents, aliases expanded
  size_t max_expanded_bytes = 8u << 20;  // scalar bytes over all documents, aliases expanded
  size_t max_scalar_bytes = 64u << 10;   // one string (a command line, an env value)
  size_t max_entries = 10'000;           // entries of one list or map
  size_t max_depth = 64;                 // nesting of lists and maps
};

// Job submissions (POST /v1/jobs): what a member may send.
InputLimits submission_limits();
// Configuration files and PUT /v1/config: admins' text, larger (a Cluster of 10,000 nodes).
InputLimits config_limits();

struct LimitViolation {
  std::string message;     // "spec.command[2]: invalid UTF-8 at byte 5" (the caller adds file:line)
  int line = 0;            // 1-based; 0 when unknown
  bool too_large = false;  // a size limit (413) rather than malformed text (400)
};

// Before parsing: refuses a text with more than limits.max_documents documents (lines that
// start `---`), or with so many separators that it may hold more than max_nodes nodes.
std::optional<LimitViolation> check_text(std::string_view text, const InputLimits& limits);

// The most parser events a text within these limits can give (every node but a document's
// root needs one of check_text's separators): past it, the parser is not coming to an end
// (yaml_documents.h stops it).
size_t max_parser_events(const InputLimits& limits);

// Running totals over the documents of one text.
struct InputBudget {
  size_t nodes = 0;
  size_t bytes = 0;
};

// Walks one parsed document (aliases expanded) against the limits and the budget shared by the
// text's documents. The walk visits at most max_nodes nodes in all, whatever the aliases.
std::optional<LimitViolation> check_document(const YAML::Node& doc, const InputLimits& limits,
                                             InputBudget& budget);

// Whether `s` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF);
// on failure *bad_at is the offset of the first bad byte.
bool valid_utf8(std::string_view s, size_t* bad_at = nullptr);

// The length of the valid UTF-8 sequence at s[i] (i < s.size()) and its code point in *cp; 0
// when the bytes there are not valid UTF-8.
size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp);

// A code point that changes what a terminal shows instead of showing itself: C0 controls and
// DEL, C1 controls (U+0080-U+009F: 8-bit CSI U+009B among them), and the bidirectional
// controls that reorder text (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069).
bool invisible_control(char32_t cp);

}  // namespace sluice
