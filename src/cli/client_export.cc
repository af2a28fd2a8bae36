#include "cli/client_export.h"

#include <cctype>
#include <map>

namespace sluice::cli {

namespace {

constexpr size_t kMaxValueBytes = 64 << 10;  // docs/api.md, Limits: one string

bool identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool shell_own(const std::string& name) {
  return name == "PWD" || name == "OLDPWD" || name == "SHLVL" || name == "_";
}

bool sluice_own(const std::string& name) {
  return name.rfind("SLUICE_", 0) == 0;
}

// Well-formed UTF-8 without NUL (what the server accepts in any string).
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || c == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

Outcome<EnvList> bad_env(const std::string& message) {
  return Outcome<EnvList>::fail({1, "error: --export: " + message});
}

}  // namespace

Outcome<EnvList> exported_env(const std::string& spec, const char* const* environ,
                              std::vector<std::string>* skipped) {
  std::map<std::string, std::string> caller;
  for (const char* const* p = environ; p && *p; ++p) {
    const std::string kv(*p);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) caller.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  // 1. The items: ALL / NONE first, then names and assignments.
  std::vector<std::string> items;
  for (size_t start = 0; start <= spec.size();) {
    auto end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    if (end > start) items.push_back(spec.substr(start, end - start));
    start = end + 1;
  }
  bool all = items.empty();
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    if (item == "ALL" || item == "NONE") {
      if (i != 0) return bad_env(item + " must come first (e.g. ALL,OMP_NUM_THREADS=4)");
      all = item == "ALL";
      continue;
    }
    const auto eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (!identifier(name)) return bad_env("\"" + item + "\" is not NAME or NAME=VALUE");
    if (sluice_own(name)) return bad_env(name + ": SLUICE_* variables are set by sluice");
    if (eq != std::string::npos) {
      out[name] = item.substr(eq + 1);
    } else if (auto it = caller.find(name); it != caller.end()) {
      out[name] = it->second;
    }
  }
  // 2. ALL: the caller's variables, less the shell's and sluice's own; explicit items win.
  if (all)
    for (const auto& [name, value] : caller) {
      if (!identifier(name) || shell_own(name) || sluice_own(name) || out.count(name)) continue;
      if (value.size() > kMaxValueBytes || !valid_utf8(value)) {
        if (skipped) skipped->push_back(name);
        continue;
      }
      out.emplace(name, value);
    }
  return Outcome<EnvList>::success(EnvList(out.begin(), out.end()));
}

}  // namespace sluice::cli
