#include "core/model/job_control.h"

#include <algorithm>
#include <charconv>

namespace sluice {

namespace {

// A non-negative decimal integer up to `max`, the whole of `s`.
bool read_int(std::string_view s, int64_t max, int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > max) return false;
  *out = v;
  return true;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::string quoted(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

// One element of an array list: "7", "0-99" or "0-15:4", appended to `tasks`.
std::string read_array_part(std::string_view part, std::vector<int32_t>& tasks) {
  const std::string bad = "--array element " + quoted(part) + " ";
  std::string_view range = part;
  int64_t step = 1;
  if (auto colon = part.find(':'); colon != std::string_view::npos) {
    range = part.substr(0, colon);
    if (!read_int(part.substr(colon + 1), kMaxArrayIndex, &step) || step < 1)
      return bad + "has a step that is not a positive integer";
  }
  int64_t lo = 0, hi = 0;
  if (auto dash = range.find('-'); dash != std::string_view::npos) {
    if (!read_int(range.substr(0, dash), kMaxArrayIndex, &lo) ||
        !read_int(range.substr(dash + 1), kMaxArrayIndex, &hi))
      return bad + "is not a range of indexes 0 to " + std::to_string(kMaxArrayIndex);
    if (hi < lo) return bad + "ends before it starts";
  } else {
    if (step != 1) return bad + "has a step but no range";
    if (!read_int(range, kMaxArrayIndex, &lo))
      return bad + "is not an index 0 to " + std::to_string(kMaxArrayIndex);
    hi = lo;
  }
  for (int64_t i = lo; i <= hi; i += step) {  // bounded: tasks are capped by the caller
    if (tasks.size() > kMaxArrayTasks) break;
    tasks.push_back(static_cast<int32_t>(i));
  }
  return {};
}

}  // namespace

Result<ArraySpec> parse_array_spec(std::string_view text) {
  ArraySpec out;
  std::string_view list = text;
  if (auto pct = text.find('%'); pct != std::string_view::npos) {
    list = text.substr(0, pct);
    int64_t t = 0;
    if (!read_int(text.substr(pct + 1), kMaxArrayTasks, &t) || t < 1)
      return Error{"--array " + quoted(text) + ": the throttle after % must be a positive integer"};
    out.throttle = static_cast<int32_t>(t);
  }
  if (list.empty()) return Error{"--array " + quoted(text) + ": no task indexes"};
  for (auto part : split(list, ',')) {
    if (part.empty()) return Error{"--array " + quoted(text) + ": an empty element"};
    if (auto why = read_array_part(part, out.tasks); !why.empty()) return Error{why};
    if (out.tasks.size() > kMaxArrayTasks)
      return Error{"--array " + quoted(text) + ": more than " + std::to_string(kMaxArrayTasks) +
                   " tasks in one submission"};
  }
  std::sort(out.tasks.begin(), out.tasks.end());
  out.tasks.erase(std::unique(out.tasks.begin(), out.tasks.end()), out.tasks.end());
  return out;
}

const char* dep_kind_name(DepKind k) {
  switch (k) {
    case DepKind::kAfter:
      return "after";
    case DepKind::kAfterAny:
      return "afterany";
    case DepKind::kAfterOk:
      return "afterok";
    case DepKind::kAfterNotOk:
      return "afternotok";
    case DepKind::kSingleton:
      return "singleton";
  }
  return "?";
}

Result<std::vector<Dependency>> parse_dependency(std::string_view text) {
  const std::string whole = "--dependency " + quoted(text) + ": ";
  if (text.find('?') != std::string_view::npos)
    return Error{whole + "'?' (any of) is not supported; ',' (all of) is"};
  if (text.empty()) return Error{whole + "empty"};
  std::vector<Dependency> out;
  for (auto part : split(text, ',')) {
    if (out.size() >= 64) return Error{whole + "more than 64 parts"};
    auto fields = split(part, ':');
    Dependency d;
    const std::string_view kind = fields[0];
    if (kind == "singleton") {
      if (fields.size() > 1) return Error{whole + "singleton takes no job ids"};
      d.kind = DepKind::kSingleton;
      out.push_back(d);
      continue;
    }
    bool known = false;
    for (auto k : {DepKind::kAfter, DepKind::kAfterAny, DepKind::kAfterOk, DepKind::kAfterNotOk})
      if (kind == dep_kind_name(k)) {
        d.kind = k;
        known = true;
      }
    if (!known)
      return Error{whole + quoted(kind) +
                   " is not a dependency type (after, afterany, afterok, afternotok, "
                   "singleton)"};
    if (fields.size() < 2)
      return Error{whole + std::string(kind) + " needs job ids (" + std::string(kind) + ":12:13)"};
    for (size_t i = 1; i < fields.size(); ++i) {
      if (d.targets.size() >= 1000) return Error{whole + "more than 1000 jobs in one part"};
      std::string_view id = fields[i];
      DepTarget t;
      int64_t v = 0;
      if (auto us = id.find('_'); us != std::string_view::npos) {
        int64_t task = 0;
        if (!read_int(id.substr(us + 1), kMaxArrayIndex, &task))
          return Error{whole + quoted(id) + " is not JOB_TASK (an array task: 12_3)"};
        t.task = static_cast<int32_t>(task);
        id = id.substr(0, us);
      }
      if (!read_int(id, int64_t{1} << 53, &v) || v < 1)
        return Error{whole + quoted(fields[i]) + " is not a job id"};
      t.job = static_cast<JobId>(v);
      d.targets.push_back(t);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace sluice
