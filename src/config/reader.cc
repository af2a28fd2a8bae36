#include "config/reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "config/loader.h"

namespace sluice::config_detail {

// 128-bit intermediates for overflow-free decimal scaling (__extension__: -Wpedantic).
__extension__ typedef __int128 Int128;

void Sink::error(std::string message) {
  if (errors.size() >= kMaxErrors) {
    ++dropped_errors;
    return;
  }
  errors.push_back(std::move(message));
}

void Sink::finish() {
  if (dropped_errors > 0 || stopped) {
    errors.push_back("... more errors not shown: stopped after " + std::to_string(kMaxErrors) +
                     " (fix these first)");
    dropped_errors = 0;
    stopped = false;
  }
}

std::string Where::str() const {
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

std::string child(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  std::string s = path;
  s += '.';
  s += key;
  return s;
}

std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string format(const Where& where, const std::string& path, const std::string& message) {
  std::string s = where.str() + ": ";
  if (!path.empty()) s += path + ": ";
  return s + message;
}

std::string quote(std::string_view text) {
  // Long or multi-line values are cut so one message stays one line.
  std::string s = "\"";
  size_t n = 0;
  for (char c : text) {
    if (++n > 60) {
      s += "...";
      break;
    }
    if (c == '\n') {
      s += "\\n";
    } else if (c == '"') {
      s += "\\\"";
    } else {
      s += c;
    }
  }
  return s + "\"";
}

Where Reader::where(const YAML::Node& node) const {
  int line = fallback_line_;
  try {
    if (node.IsDefined()) {
      int l = node.Mark().line;
      if (l >= 0) line = l + 1;
    }
  } catch (const std::exception&) {
  }
  return Where{file_, line};
}

void Reader::error(const YAML::Node& at, const std::string& path, const std::string& message) {
  sink_.error(format(where(at), path, message));
}
void Reader::warning(const YAML::Node& at, const std::string& path, const std::string& message) {
  sink_.warning(format(where(at), path, message));
}
void Reader::note(const YAML::Node& at, const std::string& path, const std::string& message) {
  sink_.note(format(where(at), path, message));
}

bool Reader::expect_map(const YAML::Node& node, const std::string& path) {
  if (node.IsMap()) return true;
  error(node, path, "must be a map");
  return false;
}

bool Reader::expect_seq(const YAML::Node& node, const std::string& path) {
  if (node.IsSequence()) return true;
  error(node, path, "must be a list");
  return false;
}

std::optional<std::string> Reader::str(const YAML::Node& node, const std::string& path,
                                       bool allow_empty) {
  if (node.IsNull()) {
    if (allow_empty) return std::string();
    error(node, path, "must not be empty");
    return std::nullopt;
  }
  if (!node.IsScalar()) {
    error(node, path, "must be a string");
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  if (s.empty() && !allow_empty) {
    error(node, path, "must not be empty");
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> Reader::integer(const YAML::Node& node, const std::string& path, int64_t min,
                                       int64_t max) {
  if (!node.IsScalar()) {
    error(node, path, "must be an integer");
    return std::nullopt;
  }
  std::string_view s = node.Scalar();
  std::string_view digits = s;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    error(node, path, quote(s) + " must be an integer");
    return std::nullopt;
  }
  if (v < min) {
    error(node, path,
          quote(s) +
              (min == 0 ? " must not be negative" : " must be at least " + std::to_string(min)));
    return std::nullopt;
  }
  if (v > max) {
    error(node, path, quote(s) + " must be at most " + std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::bool_word(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

std::optional<bool> Reader::boolean(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (auto b = bool_word(s)) return b;
    error(node, path, quote(s) + " must be true or false");
    return std::nullopt;
  }
  error(node, path, "must be true or false");
  return std::nullopt;
}

std::optional<double> Reader::number(const YAML::Node& node, const std::string& path, double min,
                                     double max) {
  if (!node.IsScalar()) {
    error(node, path, "must be a number");
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) {
    error(node, path, quote(s) + " must be a number");
    return std::nullopt;
  }
  if (v < min || v > max) {
    error(node, path,
          quote(s) + (min == 0 && v < 0 ? " must not be negative"
                                        : " must be between " + std::to_string(min).substr(0, 8) +
                                              " and " + std::to_string(max).substr(0, 12)));
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> Reader::quantity(const YAML::Node& node, const std::string& path,
                                        ResourceId resource) {
  if (!node.IsScalar()) {
    error(node, path, "must be a quantity (e.g. 8, 500m, 64Gi)");
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  auto milli = parse_quantity_milli(s);
  if (!milli) {
    error(node, path, quote(s) + " is not a quantity (e.g. 8, 500m, 64Gi)");
    return std::nullopt;
  }
  if (*milli < 0) {
    error(node, path, quote(s) + " must not be negative");
    return std::nullopt;
  }
  return milli_to_canonical(resource, *milli);
}

std::optional<TimeNs> Reader::duration(const YAML::Node& node, const std::string& path) {
  return bounded_duration(node, path, kMaxDurationNs, "is more than 10 years");
}

std::optional<TimeNs> Reader::time_point(const YAML::Node& node, const std::string& path) {
  return bounded_duration(node, path, kMaxTimePointNs, "is after 2200-01-01 (seconds since 1970)");
}

std::optional<TimeNs> Reader::bounded_duration(const YAML::Node& node, const std::string& path,
                                               TimeNs max_ns, const char* too_large) {
  if (!node.IsScalar()) {
    error(node, path, "must be a duration (e.g. 90s, 30m, 1h)");
    return std::nullopt;
  }
  const std::string& s = node.Scalar();
  if (!s.empty() && s[0] == '-') {
    error(node, path, quote(s) + " must not be negative");
    return std::nullopt;
  }
  auto ns = parse_duration_ns(s);
  if (!ns) {
    error(node, path, quote(s) + " is not a duration (e.g. 90s, 30m, 1h)");
    return std::nullopt;
  }
  if (*ns > max_ns) {
    error(node, path, quote(s) + " " + too_large);
    return std::nullopt;
  }
  return ns;
}

std::optional<Labels> Reader::labels(const YAML::Node& node, const std::string& path) {
  if (node.IsNull()) return Labels{};
  if (!expect_map(node, path)) return std::nullopt;
  Labels out;
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    auto key = str(it->first, path);
    if (!key) {
      ok = false;
      continue;
    }
    auto value = str(it->second, child(path, *key), /*allow_empty=*/true);
    if (!value) {
      ok = false;
      continue;
    }
    for (const auto& [k, v] : out) {
      if (k == *key) {
        error(it->first, child(path, *key), "duplicate key");
        ok = false;
      }
    }
    out.emplace_back(*key, *value);
  }
  if (!ok) return std::nullopt;
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<std::string>> Reader::str_list(const YAML::Node& node,
                                                         const std::string& path) {
  if (!expect_seq(node, path)) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.size(); ++i) {
    auto s = str(node[i], index(path, i));
    if (s) {
      out.push_back(*s);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

MapReader::MapReader(Reader& r, const YAML::Node& node, std::string path, const Fields& fields)
    : r_(r), node_(node), path_(std::move(path)) {
  if (node.IsNull()) {  // `spec:` with nothing: an empty map
    is_map_ = true;
    return;
  }
  if (!r_.expect_map(node, path_)) return;
  is_map_ = true;
  read_entries();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::string& key = entries_[i].first;
    auto is = [&](const std::vector<const char*>& names) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) { return key == n; });
    };
    if (is(fields.known)) continue;
    if (is(fields.ignored)) {
      r_.warning(keys_[i], child(path_, key),
                 std::string("ignored (") +
                     (fields.ignored_reason ? fields.ignored_reason : "not used by sluice") + ")");
      continue;
    }
    std::string known;
    for (const char* k : fields.known) known += (known.empty() ? "" : ", ") + std::string(k);
    r_.error(keys_[i], child(path_, key), "unknown field (known: " + known + ")");
  }
}

MapReader::MapReader(Reader& r, const YAML::Node& node, std::string path,
                     const std::vector<const char*>& used, std::vector<std::string>* ignored)
    : r_(r), node_(node), path_(std::move(path)) {
  if (node.IsNull()) {
    is_map_ = true;
    return;
  }
  if (!r_.expect_map(node, path_)) return;
  is_map_ = true;
  read_entries();
  for (const auto& [key, value] : entries_) {
    if (std::none_of(used.begin(), used.end(), [&](const char* n) { return key == n; }))
      ignored->push_back(child(path_, key));
  }
}

void MapReader::read_entries() {
  // Duplicates are found through an index (a 40,000-entry env took seconds when each key was
  // compared with every earlier one).
  std::unordered_map<std::string, size_t> index;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) {
      r_.error(it->first, path_, "keys must be strings");
      continue;
    }
    const std::string& key = it->first.Scalar();
    const auto [at, fresh] = index.try_emplace(key, entries_.size());
    if (!fresh) {
      r_.error(
          it->first, child(path_, key),
          "duplicate key (first at line " + std::to_string(r_.where(keys_[at->second]).line) + ")");
      continue;
    }
    entries_.emplace_back(key, it->second);
    keys_.push_back(it->first);
  }
}

const YAML::Node* MapReader::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k == key) return &v;
  return nullptr;
}

const YAML::Node* MapReader::required(std::string_view key) {
  const YAML::Node* n = find(key);
  if (!n && is_map_) r_.error(node_, child(path_, key), "required field missing");
  return n;
}

std::optional<int64_t> parse_scaled_decimal(std::string_view s, int64_t scale) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  Int128 whole = 0;
  Int128 frac = 0, frac_scale = 1;
  size_t i = 0, digits = 0;
  constexpr Int128 kLimit = static_cast<Int128>(INT64_MAX);
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > kLimit) return std::nullopt;
  }
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
      if (frac_scale < 1'000'000'000'000'000LL) {
        frac = frac * 10 + (s[i] - '0');
        frac_scale *= 10;
      }
    }
  }
  if (digits == 0 || i != s.size()) return std::nullopt;
  Int128 v = whole * scale + (frac * scale + frac_scale / 2) / frac_scale;
  if (v > kLimit) return std::nullopt;
  return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

}  // namespace sluice::config_detail

namespace sluice {

using config_detail::Int128;

std::optional<TimeNs> parse_duration_ns(std::string_view s) {
  using config_detail::parse_scaled_decimal;
  if (s.empty()) return std::nullopt;
  // A plain number: seconds.
  if (auto secs = parse_scaled_decimal(s, kNsPerSec)) {
    if (*secs < 0) return std::nullopt;
    return *secs;
  }
  // Go-style: one or more <decimal><unit>, e.g. "1h30m", "1.5h", "250ms".
  Int128 total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    std::string_view number = s.substr(start, i - start);
    size_t unit_start = i;
    while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == 'u')) ++i;
    std::string_view unit = s.substr(unit_start, i - unit_start);
    int64_t scale = 0;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us") {
      scale = 1000;
    } else if (unit == "ms") {
      scale = 1000'000;
    } else if (unit == "s") {
      scale = kNsPerSec;
    } else if (unit == "m") {
      scale = 60 * kNsPerSec;
    } else if (unit == "h") {
      scale = 3600 * kNsPerSec;
    } else if (unit == "d") {
      scale = 86400 * kNsPerSec;
    } else {
      return std::nullopt;
    }
    auto v = parse_scaled_decimal(number, scale);
    if (!v || *v < 0) return std::nullopt;
    total += *v;
    if (total > static_cast<Int128>(INT64_MAX)) return std::nullopt;
  }
  return static_cast<TimeNs>(total);
}

}  // namespace sluice
