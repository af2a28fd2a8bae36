#include "cli/client_squeue.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "cli/client_views.h"

namespace sluice::cli {

using nlohmann::json;

namespace {

struct Field {
  bool literal = false;
  std::string text;  // literal text, or the type letter
  bool right = false;
  int width = 0;  // 0: as wide as the value
};

// Splits the format into literal text and fields; none (with *error) at a bad field.
std::optional<std::vector<Field>> parse(const std::string& f, std::string* error) {
  std::vector<Field> out;
  for (size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      const size_t next = f.find('%', i);
      out.push_back({true, f.substr(i, next - i)});
      i = next == std::string::npos ? f.size() : next;
      continue;
    }
    Field fl;
    size_t k = i + 1;
    if (k < f.size() && f[k] == '.') fl.right = true, ++k;
    while (k < f.size() && f[k] >= '0' && f[k] <= '9' && fl.width < 1000)
      fl.width = fl.width * 10 + (f[k++] - '0');
    if (k >= f.size()) {
      *error = "the format ends inside a field: '" + f.substr(i) + "'";
      return std::nullopt;
    }
    const char type = f[k];
    if (type == '%') {
      out.push_back({true, "%"});
    } else if (std::string("iAjuaPqtTMDNRbVSe").find(type) == std::string::npos) {
      *error = std::string("unknown field %") + type +
               " (known: %i %A %j %u %a %P %q %t %T %M %D %N %R %b %V %S %e %%)";
      return std::nullopt;
    } else {
      fl.text = std::string(1, type);
      out.push_back(fl);
    }
    i = k + 1;
  }
  return out;
}

std::string str(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string state_of(const json& j, bool code) {
  const std::string s = str(j, "state");
  const auto to = j.find("timed_out");
  if (to != j.end() && to->is_boolean() && to->get<bool>()) return code ? "TO" : "TIMEOUT";
  static const std::vector<std::array<const char*, 3>> names = {
      {"pending", "PD", "PENDING"},     {"running", "R", "RUNNING"},
      {"succeeded", "CD", "COMPLETED"}, {"failed", "F", "FAILED"},
      {"cancelled", "CA", "CANCELLED"}, {"rejected", "F", "FAILED"}};
  for (const auto& n : names)
    if (s == n[0]) return code ? n[1] : n[2];
  return s;
}

// squeue's TIME: M:SS, H:MM:SS, D-HH:MM:SS.
std::string elapsed(double secs) {
  const long long t = secs > 0 ? static_cast<long long>(secs) : 0;
  const long long d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, s = t % 60;
  char buf[48];
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
  else if (h > 0)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", m, s);
  return buf;
}

std::string time_used(const json& j, double now) {
  const double start = unix_seconds(j.value("start_time", json()));
  if (start < 0) return "0:00";
  const double end = unix_seconds(j.value("end_time", json()));
  return elapsed((end >= 0 ? end : now) - start);
}

std::string node_count(const json& j) {
  std::set<std::string> nodes;
  if (const auto p = j.find("placement"); p != j.end() && p->is_array())
    for (const auto& pod : *p) nodes.insert(str(pod, "node"));
  if (!nodes.empty() && str(j, "state") != "pending") return std::to_string(nodes.size());
  const std::string pods = str(j, "pods");
  return pods.empty() ? "1" : pods;
}

std::string reason_or_nodes(const json& j) {
  if (str(j, "state") != "pending") return placement_nodes(j.value("placement", json()), 1000);
  const auto r = j.find("reason");
  if (r == j.end() || r->is_null()) return "(None)";
  const std::string text = r->is_object() ? str(*r, "message") : str(j, "reason");
  return "(" + text + ")";
}

std::string value(const json& j, char type, double now) {
  switch (type) {
    case 'i':
    case 'A':
      return str(j, "id");
    case 'j':
      return str(j, "name");
    case 'u':
      return str(j, "user");
    case 'a':
      return str(j, "namespace");
    case 'P':
      return str(j, j.contains("queue") ? "queue" : "cluster_queue");
    case 'q':
      return str(j, "priority_class");
    case 't':
      return state_of(j, true);
    case 'T':
      return state_of(j, false);
    case 'M':
      return time_used(j, now);
    case 'D':
      return node_count(j);
    case 'N':
      return placement_nodes(j.value("placement", json()), 1000);
    case 'R':
      return reason_or_nodes(j);
    case 'b':
      return "gpu:" + str(j, "gpus");
    case 'V':
      return str(j, "submit_time");
    case 'S':
      return str(j, "start_time");
    case 'e':
      return str(j, "end_time");
  }
  return "";
}

const char* header_of(char type) {
  switch (type) {
    case 'i':
    case 'A':
      return "JOBID";
    case 'j':
      return "NAME";
    case 'u':
      return "USER";
    case 'a':
      return "ACCOUNT";
    case 'P':
      return "PARTITION";
    case 'q':
      return "QOS";
    case 't':
      return "ST";
    case 'T':
      return "STATE";
    case 'M':
      return "TIME";
    case 'D':
      return "NODES";
    case 'N':
      return "NODELIST";
    case 'R':
      return "NODELIST(REASON)";
    case 'b':
      return "TRES_PER_NODE";
    case 'V':
      return "SUBMIT_TIME";
    case 'S':
      return "START_TIME";
    case 'e':
      return "END_TIME";
  }
  return "";
}

std::string cell(std::string v, const Field& f) {
  if (f.width <= 0) return v;
  const auto w = static_cast<size_t>(f.width);
  if (v.size() > w) v.resize(w);
  const std::string pad(w - v.size(), ' ');
  return f.right ? pad + v : v + pad;
}

std::string line(const std::vector<Field>& fields, const json* job, double now) {
  std::string out;
  for (const auto& f : fields)
    out += f.literal ? f.text : cell(job ? value(*job, f.text[0], now) : header_of(f.text[0]), f);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out + "\n";
}

}  // namespace

std::optional<std::string> squeue_check(const std::string& format) {
  std::string error;
  if (!parse(format, &error)) return error;
  return std::nullopt;
}

std::string squeue_lines(const json& jobs, const std::string& format, bool header,
                         double now_unix_s) {
  std::string error;
  const auto fields = parse(format, &error);
  if (!fields) return "";
  std::string out = header ? line(*fields, nullptr, now_unix_s) : "";
  if (jobs.is_array())
    for (const auto& j : jobs) out += line(*fields, &j, now_unix_s);
  return out;
}

}  // namespace sluice::cli
