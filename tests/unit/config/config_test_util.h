#pragma once
// Helpers shared by the loader tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/loader.h"

namespace sluice::testing_config {

// Raw-string YAML without its leading newline, so line numbers in messages match the text.
inline std::string yaml(const char* text) {
  std::string s = text;
  if (!s.empty() && s[0] == '\n') s.erase(0, 1);
  return s;
}

inline LoadOutput load_one(const std::string& text, const std::string& name = "test.yaml",
                           bool strict = false) {
  LoadOptions options;
  options.strict = strict;
  return load({Source{name, text}}, options);
}

inline bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Some message contains every fragment.
inline bool any_contains(const std::vector<std::string>& v,
                         std::initializer_list<std::string> fragments) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& m) {
    return std::all_of(fragments.begin(), fragments.end(),
                       [&](const std::string& f) { return m.find(f) != std::string::npos; });
  });
}

inline std::string dump(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& m : v) s += "\n  " + m;
  return s;
}

inline std::string source_dir() {
  return SLUICE_SOURCE_DIR;
}

}  // namespace sluice::testing_config
