#include "config/input_limits.h"

#include <vector>

namespace sluice {

InputLimits submission_limits() {
  return InputLimits{};
}

InputLimits config_limits() {
  InputLimits l;  // admins' text: a Cluster may list thousands of nodes
  l.max_documents = 10'000;
  l.max_nodes = 5'000'000;
  l.max_expanded_bytes = 64u << 20;
  l.max_entries = 100'000;
  return l;
}

size_t utf8_sequence(std::string_view s, size_t i, char32_t* cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const unsigned c = p[i];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len = 0;
  unsigned v = 0, min = 0;
  if ((c & 0xE0) == 0xC0) {
    len = 2, v = c & 0x1F, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3, v = c & 0x0F, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((p[i + k] & 0xC0) != 0x80) return 0;
    v = (v << 6) | (p[i + k] & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

bool valid_utf8(std::string_view s, size_t* bad_at) {
  char32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence(s, i, &cp);
    if (len == 0) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

bool invisible_control(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
         cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::optional<LimitViolation> check_text(std::string_view text, const InputLimits& limits) {
  // 1. Documents: lines that start with `---` (the first document needs none).
  size_t docs = 1;
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, 3, "---") == 0 && pos > 0 && ++docs > limits.max_documents)
      return LimitViolation{"more than " + std::to_string(limits.max_documents) +
                                " YAML documents in one body (split it into several requests)",
                            0, true};
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  // 2. Nodes: each needs one of these characters before or after it, so their count bounds
  // the nodes the parser will build (yaml-cpp holds ~500 bytes per node, so 1 MiB of `a,`
  // would take 240 MB before any walk could refuse it).
  size_t marks = 0;
  for (char c : text)
    marks += c == ',' || c == '\n' || c == '[' || c == '{' || c == ':' || c == '-';
  if (marks > 2 * limits.max_nodes)
    return LimitViolation{"more than " + std::to_string(limits.max_nodes) +
                              " YAML nodes in one body (" + std::to_string(marks) +
                              " separators; split it into several requests)",
                          0, true};
  return std::nullopt;
}

size_t max_parser_events(const InputLimits& limits) {
  return 2 * limits.max_nodes + 2 * limits.max_documents + 16;
}

namespace {

// One walk: the path to the node in hand (keys and indexes) for messages.
class Walk {
 public:
  Walk(const InputLimits& limits, InputBudget& budget) : limits_(limits), budget_(budget) {}

  std::optional<LimitViolation> node(const YAML::Node& n, size_t depth) {
    if (++budget_.nodes > limits_.max_nodes)
      return fail(n,
                  "more than " + std::to_string(limits_.max_nodes) +
                      " YAML nodes (aliases count each time they are used)",
                  true);
    if (depth > limits_.max_depth)
      return fail(n, "nested more than " + std::to_string(limits_.max_depth) + " levels deep",
                  true);
    switch (n.Type()) {
      case YAML::NodeType::Scalar:
        return scalar(n, n.Scalar());
      case YAML::NodeType::Sequence:
        return sequence(n, depth);
      case YAML::NodeType::Map:
        return map(n, depth);
      default:
        return std::nullopt;
    }
  }

 private:
  std::optional<LimitViolation> scalar(const YAML::Node& n, const std::string& s) {
    budget_.bytes += s.size();
    if (budget_.bytes > limits_.max_expanded_bytes)
      return fail(n,
                  "more than " + std::to_string(limits_.max_expanded_bytes >> 20) +
                      " MiB of text once aliases are expanded",
                  true);
    if (s.size() > limits_.max_scalar_bytes)
      return fail(n,
                  "a string of " + std::to_string(s.size()) + " bytes (at most " +
                      std::to_string(limits_.max_scalar_bytes >> 10) + " KiB)",
                  true);
    size_t at = 0;
    if (!valid_utf8(s, &at))
      return fail(n, "invalid UTF-8 at byte " + std::to_string(at) + " (text must be UTF-8)",
                  false);
    if (s.find('\0') != std::string::npos)
      return fail(n, "a NUL byte at byte " + std::to_string(s.find('\0')), false);
    return std::nullopt;
  }

  std::optional<LimitViolation> sequence(const YAML::Node& n, size_t depth) {
    if (n.size() > limits_.max_entries) return too_many(n);
    size_t i = 0;
    for (auto it = n.begin(); it != n.end(); ++it, ++i) {
      path_.push_back(Step{nullptr, i});
      if (auto v = node(*it, depth + 1)) return v;
      path_.pop_back();
    }
    return std::nullopt;
  }

  std::optional<LimitViolation> map(const YAML::Node& n, size_t depth) {
    if (n.size() > limits_.max_entries) return too_many(n);
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;
      if (auto v = node(key, depth + 1)) return v;
      path_.push_back(Step{key.IsScalar() ? &key.Scalar() : &kOddKey, 0});
      if (auto v = node(it->second, depth + 1)) return v;
      path_.pop_back();
    }
    return std::nullopt;
  }

  std::optional<LimitViolation> too_many(const YAML::Node& n) {
    return fail(n,
                std::to_string(n.size()) + " entries (at most " +
                    std::to_string(limits_.max_entries) + " in one list or map)",
                true);
  }

  std::optional<LimitViolation> fail(const YAML::Node& n, const std::string& what, bool too_large) {
    std::string path;
    for (const Step& p : path_)
      path += p.key ? (path.empty() ? "" : ".") + *p.key : "[" + std::to_string(p.index) + "]";
    const int line = n.Mark().line >= 0 ? n.Mark().line + 1 : 0;
    return LimitViolation{(path.empty() ? "" : path + ": ") + what, line, too_large};
  }

  // A map key (its text lives in the tree) or a list index: the path is spelled out only for
  // a message, so the walk allocates nothing per node.
  struct Step {
    const std::string* key;
    size_t index;
  };
  inline static const std::string kOddKey = "?";  // a key that is not a scalar

  const InputLimits& limits_;
  InputBudget& budget_;
  std::vector<Step> path_;
};

}  // namespace

std::optional<LimitViolation> check_document(const YAML::Node& doc, const InputLimits& limits,
                                             InputBudget& budget) {
  return Walk(limits, budget).node(doc, 0);
}

}  // namespace sluice
