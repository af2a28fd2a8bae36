#pragma once
// Internal to the loader: reading YAML nodes with error messages that name the file, the line and
// the field path ("queues.yaml:14: spec.cohort: must be a string"). Nothing here throws.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/model/cluster.h"
#include "core/model/job.h"
#include "core/model/resources.h"

namespace sluice::config_detail {

inline constexpr size_t kMaxErrors = 100;

// Collects messages. Errors beyond kMaxErrors are counted, not kept.
struct Sink {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  size_t dropped_errors = 0;
  bool stopped = false;  // reading stopped early because the bound was reached
  void error(std::string message);
  void warning(std::string message) { warnings.push_back(std::move(message)); }
  void note(std::string message) { notes.push_back(std::move(message)); }
  // True once kMaxErrors are kept; callers stop reading more documents then.
  bool full() {
    if (errors.size() >= kMaxErrors) stopped = true;
    return stopped;
  }
  // Appends one line saying that more errors were not shown, when that is so.
  void finish();
};

// A place in a source: "file:line".
struct Where {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown
  std::string str() const;
};

std::string child(const std::string& path, std::string_view key);
std::string index(const std::string& path, size_t i);
// "file:line: path: message" (path may be empty).
std::string format(const Where& where, const std::string& path, const std::string& message);
// `"text"` for messages.
std::string quote(std::string_view text);

// Reads values of one source; every message goes to the sink with this source's name.
class Reader {
 public:
  Reader(std::string file, Sink& sink) : file_(std::move(file)), sink_(sink) {}

  const std::string& file() const { return file_; }
  Sink& sink() { return sink_; }
  Where where(const YAML::Node& node) const;
  void error(const YAML::Node& at, const std::string& path, const std::string& message);
  void warning(const YAML::Node& at, const std::string& path, const std::string& message);
  void note(const YAML::Node& at, const std::string& path, const std::string& message);
  // Remembers the line of the enclosing object, used when a node has no mark.
  void set_fallback_line(int line) { fallback_line_ = line; }

  // Each returns nullopt (after reporting) when the node is not of the wanted form.
  bool expect_map(const YAML::Node& node, const std::string& path);
  bool expect_seq(const YAML::Node& node, const std::string& path);
  std::optional<std::string> str(const YAML::Node& node, const std::string& path,
                                 bool allow_empty = false);
  std::optional<int64_t> integer(const YAML::Node& node, const std::string& path, int64_t min,
                                 int64_t max);
  std::optional<bool> boolean(const YAML::Node& node, const std::string& path);
  // The spellings boolean() takes: true/True/TRUE, false/False/FALSE; nullopt for others.
  static std::optional<bool> bool_word(const std::string& s);
  std::optional<double> number(const YAML::Node& node, const std::string& path, double min,
                               double max);
  // A Kubernetes quantity in the canonical unit of `resource`; negative is an error.
  std::optional<int64_t> quantity(const YAML::Node& node, const std::string& path,
                                  ResourceId resource);
  // A duration (docs/config.md: 90s, 1h30m, a plain number of seconds), at most 10 years
  // (kMaxDurationNs); a time point written the same way (seconds on the scheduler's clock, a
  // budget's anchor) may go up to 2200-01-01 (kMaxTimePointNs).
  std::optional<TimeNs> duration(const YAML::Node& node, const std::string& path);
  std::optional<TimeNs> time_point(const YAML::Node& node, const std::string& path);
  std::optional<Labels> labels(const YAML::Node& node, const std::string& path);
  std::optional<std::vector<std::string>> str_list(const YAML::Node& node, const std::string& path);
  // One of `choices` (exact spelling); the error lists them.
  template <class E>
  std::optional<E> choice(const YAML::Node& node, const std::string& path,
                          std::initializer_list<std::pair<const char*, E>> choices) {
    auto s = str(node, path);
    if (!s) return std::nullopt;
    std::string names;
    for (const auto& [name, value] : choices) {
      if (*s == name) return value;
      names += names.empty() ? "" : ", ";
      names += name;
    }
    error(node, path, quote(*s) + " must be one of " + names);
    return std::nullopt;
  }

 private:
  std::optional<TimeNs> bounded_duration(const YAML::Node& node, const std::string& path,
                                         TimeNs max_ns, const char* too_large);
  std::string file_;
  Sink& sink_;
  int fallback_line_ = 0;
};

// A YAML map being read. The constructor checks its keys against the known fields (and the
// fields that are accepted but ignored with a warning) and reports unknown or duplicate keys;
// or, in collect mode, lists unknown keys as "ignored" paths instead (Pod conversion).
class MapReader {
 public:
  struct Fields {
    std::vector<const char*> known;
    std::vector<const char*> ignored = {};  // accepted but unused: a warning each
    const char* ignored_reason = nullptr;   // "sluice does not implement Kueue's admission checks"
  };
  // node must be a map (checked: reports "must be a map" and reads as empty otherwise).
  MapReader(Reader& r, const YAML::Node& node, std::string path, const Fields& fields);
  // Collect mode: unknown keys are appended to *ignored as full paths, never errors.
  MapReader(Reader& r, const YAML::Node& node, std::string path,
            const std::vector<const char*>& used, std::vector<std::string>* ignored);

  bool is_map() const { return is_map_; }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  std::string path(std::string_view key) const { return child(path_, key); }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // The value of `key`; nullptr when absent.
  const YAML::Node* find(std::string_view key) const;
  // Like find, but reports "required field missing" when absent.
  const YAML::Node* required(std::string_view key);
  // All entries in document order (keys are strings).
  const std::vector<std::pair<std::string, YAML::Node>>& entries() const { return entries_; }
  const YAML::Node& key_node(size_t i) const { return keys_[i]; }

 private:
  void read_entries();
  Reader& r_;
  YAML::Node node_;
  std::string path_;
  bool is_map_ = false;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
  std::vector<YAML::Node> keys_;
};

// Reads the fields of one map into their destinations, one line a field, and remembers whether
// all of them read: an absent optional field leaves its destination as it was; an absent
// required one is reported ("required field missing") as a value of the wrong form is. Every
// field is read (and reported) whatever the ones before it did.
class FieldReader {
 public:
  enum Need { kOptional, kRequired };
  FieldReader(Reader& r, MapReader& m) : r_(r), m_(m) {}

  bool ok() const { return ok_; }
  void fail() { ok_ = false; }
  // Folds in the result of a read done elsewhere.
  void add(bool read_ok) { ok_ = ok_ && read_ok; }

  // `key` through read(node, path) -> std::optional<V>, stored into *out when it reads.
  template <class T, class Read>
  void read(const char* key, T* out, Need need, Read&& read) {
    const YAML::Node* n = need == kRequired ? m_.required(key) : m_.find(key);
    if (!n) {
      if (need == kRequired) ok_ = false;
      return;
    }
    auto v = read(*n, m_.path(key));
    ok_ = ok_ && v;
    if (v) *out = static_cast<T>(std::move(*v));
  }
  void str(const char* key, std::string* out, Need need = kOptional, bool allow_empty = false) {
    read(key, out, need,
         [&](const YAML::Node& n, const std::string& p) { return r_.str(n, p, allow_empty); });
  }
  template <class T>
  void integer(const char* key, T* out, int64_t min, int64_t max, Need need = kOptional) {
    read(key, out, need,
         [&](const YAML::Node& n, const std::string& p) { return r_.integer(n, p, min, max); });
  }
  void quantity(const char* key, int64_t* out, ResourceId resource, Need need = kOptional) {
    read(key, out, need,
         [&](const YAML::Node& n, const std::string& p) { return r_.quantity(n, p, resource); });
  }
  void boolean(const char* key, bool* out, Need need = kOptional) {
    read(key, out, need,
         [&](const YAML::Node& n, const std::string& p) { return r_.boolean(n, p); });
  }
  void labels(const char* key, Labels* out, Need need = kOptional) {
    read(key, out, need,
         [&](const YAML::Node& n, const std::string& p) { return r_.labels(n, p); });
  }

 private:
  Reader& r_;
  MapReader& m_;
  bool ok_ = true;
};

// Decimal text ("12", "0.5", "1.25") times `scale`, rounded to nearest; nullopt when malformed
// or out of range. A leading '-' is accepted and yields a negative value.
std::optional<int64_t> parse_scaled_decimal(std::string_view text, int64_t scale);

}  // namespace sluice::config_detail
