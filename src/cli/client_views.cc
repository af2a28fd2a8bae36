#include "cli/client_views.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <map>
#include <set>
#include <vector>

#include "cli/client_table.h"

namespace sluice::cli {

using nlohmann::json;

namespace {

constexpr const char* kGpuResource = "nvidia.com/gpu";

// The first of `keys` that obj has with a non-null value.
const json* field(const json& obj, std::initializer_list<const char*> keys) {
  if (!obj.is_object()) return nullptr;
  for (const char* k : keys) {
    auto it = obj.find(k);
    if (it != obj.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

std::string text_of(const json* v) {
  if (v == nullptr) return "-";
  if (v->is_string()) return v->get<std::string>();
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "no";
  if (v->is_number_integer()) return std::to_string(v->get<long long>());
  if (v->is_number()) return format_decimal(v->get<double>(), 2);
  return v->dump();
}

// A number, or a quantity string as the server formats counts ("16", "500m" = 0.5); NaN
// otherwise (memory quantities such as "64Gi" are not counts and stay out of the GPU columns).
double number_of(const json* v) {
  if (v == nullptr) return NAN;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) return NAN;
    if (*end == '\0') return d;
    if (end[0] == 'm' && end[1] == '\0') return d / 1000.0;
  }
  return NAN;
}

// The list in a reply: {"<key>": [...]} or a bare array.
const json& items(const json& reply, const char* key) {
  static const json kEmpty = json::array();
  if (reply.is_array()) return reply;
  if (reply.is_object()) {
    auto it = reply.find(key);
    if (it != reply.end() && it->is_array()) return *it;
  }
  return kEmpty;
}

std::size_t cap(const ViewOptions& o, std::size_t width) {
  return o.wide ? 0 : width;
}

// A quantity that may come in units or in milli-units under a "_milli" name: GPUs as the
// server counts them (a half GPU is 0.5).
double quantity(const json& obj, const char* key) {
  std::string milli = std::string(key) + "_milli";
  if (const json* v = field(obj, {milli.c_str()})) return number_of(v) / 1000.0;
  return number_of(field(obj, {key}));
}

// Seconds since an event, "-" when the time is unknown.
std::string age_since(const json* t, double now) {
  if (t == nullptr) return "-";
  double at = unix_seconds(*t);
  if (at < 0) return "-";
  return format_age(now - at);
}

// ---- queues ----

struct Usage {
  std::string flavor, resource;
  double used = NAN, nominal = NAN, borrowed = NAN;
};

Usage usage_entry(const json& u, std::string flavor, std::string resource) {
  Usage out;
  out.flavor = std::move(flavor);
  out.resource = std::move(resource);
  if (const json* f = field(u, {"flavor"}); f && f->is_string()) out.flavor = f->get<std::string>();
  if (const json* r = field(u, {"resource"}); r && r->is_string())
    out.resource = r->get<std::string>();
  out.used = quantity(u, "used");
  if (std::isnan(out.used)) out.used = quantity(u, "usage");
  out.nominal = quantity(u, "nominal");
  if (std::isnan(out.nominal)) out.nominal = quantity(u, "nominal_quota");
  out.borrowed = quantity(u, "borrowed");
  return out;
}

// Usage as a list [{flavor, resource, used, nominal, borrowed}] or as nested objects
// {flavor: {resource: {used, nominal, borrowed}}}.
std::vector<Usage> usages(const json& q) {
  std::vector<Usage> out;
  const json* u = field(q, {"usage", "resources", "flavors"});
  if (u == nullptr) return out;
  if (u->is_array()) {
    for (const auto& e : *u)
      if (e.is_object()) out.push_back(usage_entry(e, "", ""));
  } else if (u->is_object()) {
    for (const auto& [flavor, per_resource] : u->items()) {
      if (!per_resource.is_object()) continue;
      for (const auto& [resource, e] : per_resource.items())
        if (e.is_object()) out.push_back(usage_entry(e, flavor, resource));
    }
  }
  return out;
}

bool is_gpu(const std::string& resource) {
  return resource == kGpuResource || resource == "gpu" || resource == "gpus";
}

// GPUs summed over flavors (NaN where the server gave none); other resources stay in --json.
Usage gpu_usage(const json& q) {
  Usage sum{"", "", NAN, NAN, NAN};
  auto add = [](double& acc, double v) {
    if (!std::isnan(v)) acc = std::isnan(acc) ? v : acc + v;
  };
  for (const auto& u : usages(q)) {
    if (!is_gpu(u.resource)) continue;
    add(sum.used, u.used);
    add(sum.nominal, u.nominal);
    add(sum.borrowed, u.borrowed);
  }
  return sum;
}

// "3 (batch-low=2,urgent=1)" from {"batch-low":2,"urgent":1}, a list of {priority_class,count},
// or a plain number.
std::string pending_text(const json& q) {
  // The per-class breakdown when the server sends one, else the total.
  const json* p = field(q, {"pending_by_class"});
  if (p == nullptr || !(p->is_object() || p->is_array())) p = field(q, {"pending"});
  if (p == nullptr) return "-";
  if (p->is_number()) return text_of(p);
  std::map<std::string, long long> by_class;
  if (p->is_object()) {
    for (const auto& [cls, n] : p->items())
      if (n.is_number()) by_class[cls] += n.get<long long>();
  } else if (p->is_array()) {
    for (const auto& e : *p) {
      const json* cls = field(e, {"priority_class", "class", "name"});
      const json* n = field(e, {"count", "pending", "jobs"});
      if (n && n->is_number()) by_class[cls ? text_of(cls) : "-"] += n->get<long long>();
    }
  }
  long long total = 0;
  std::string parts;
  for (const auto& [cls, n] : by_class) {
    total += n;
    if (n == 0) continue;
    parts += (parts.empty() ? "" : ",") + (cls.empty() ? std::string("none") : cls) + "=" +
             std::to_string(n);
  }
  if (parts.empty()) return std::to_string(total);
  return std::to_string(total) + " (" + parts + ")";
}

std::string count_text(const json* v) {
  if (v == nullptr) return "-";
  if (v->is_array()) return std::to_string(v->size());
  return text_of(v);
}

std::string gpu_number(double v) {
  return std::isnan(v) ? "-" : format_decimal(v, 3);
}

}  // namespace

double unix_seconds(const json& value) {
  if (value.is_number()) {
    double v = value.get<double>();
    // Wire times are sometimes in ms or ns (src/proto); seconds stay below 1e11 until 5138.
    if (v > 1e17) return v / 1e9;
    if (v > 1e14) return v / 1e6;
    if (v > 1e11) return v / 1e3;
    return v;
  }
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    std::tm tm{};
    double sec = 0;
    int consumed = 0;
    if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%lf%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                    &tm.tm_hour, &tm.tm_min, &sec, &consumed) == 6) {
      tm.tm_year -= 1900;
      tm.tm_mon -= 1;
      tm.tm_sec = 0;
      // Only UTC ("Z" or nothing); an offset would need parsing the server never needs.
      std::string rest = s.substr(static_cast<std::size_t>(consumed));
      if (rest.empty() || rest == "Z" || rest == "+00:00")
        return static_cast<double>(timegm(&tm)) + sec;
    }
  }
  return -1;
}

std::string placement_nodes(const json& placement, std::size_t max_nodes) {
  if (!placement.is_array() || placement.empty()) return "-";
  std::vector<std::string> nodes;
  std::set<std::string> seen;
  for (const auto& p : placement) {
    const json* n = field(p, {"node"});
    if (n == nullptr) continue;
    std::string name = text_of(n);
    if (seen.insert(name).second) nodes.push_back(name);
  }
  if (nodes.empty()) return "-";
  std::string out;
  std::size_t shown = std::min(nodes.size(), std::max<std::size_t>(max_nodes, 1));
  for (std::size_t i = 0; i < shown; ++i) out += (i ? "," : "") + nodes[i];
  if (shown < nodes.size()) out += ",+" + std::to_string(nodes.size() - shown);
  return out;
}

// A job's DEADLINE cell: the verdict once it ended ("met", "missed"), else the time left
// ("in 1h5m") or how long ago it passed ("-12m"); "-" without a deadline.
std::string deadline_cell(const json& j, double now) {
  const json* by = field(j, {"complete_by"});
  if (!by || !by->is_string()) return "-";
  if (const json* v = field(j, {"deadline"}); v && v->is_string()) return v->get<std::string>();
  const double at = unix_seconds(*by);
  if (at < 0) return "-";
  return now <= at ? "in " + format_age(at - now) : "-" + format_age(now - at);
}

// A pending job's predicted start (JobView "predicted_start", docs/api.md) for START: the
// estimate in UTC ("2026-12-02T19:04:05Z", as squeue --start shows a time), ">TIME" past the
// forecast's bound, "never", "held", "next-cycle"; "-" for a job that is not pending.
std::string start_text(const json* p) {
  if (p == nullptr || !p->is_object()) return "-";
  const std::string status = text_of(field(*p, {"status"}));
  auto utc = [](const json* t) -> std::string {
    return t != nullptr && t->is_number() ? utc_time_text(t->get<double>()) : "?";
  };
  if (status == "estimated") return utc(field(*p, {"time"}));
  if (status == "beyond-bound") return ">" + utc(field(*p, {"not_before"}));
  return status;
}

namespace {

// "3-7,9,11-12" from task indexes.
std::string task_ranges(std::vector<long long> tasks) {
  std::sort(tasks.begin(), tasks.end());
  std::string out;
  for (size_t i = 0; i < tasks.size();) {
    size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(tasks[i]) +
           (j > i ? "-" + std::to_string(tasks[j]) : "");
    i = j + 1;
  }
  return out;
}

bool pending_task(const json& j) {
  const json* st = field(j, {"state"});
  const json* task = field(j, {"array_task"});
  return st && st->is_string() && *st == "pending" && task && task->is_number() &&
         field(j, {"array_job"}) && field(j, {"array_job"})->is_number();
}

}  // namespace

json collapse_pending_arrays(const json& jobs) {
  std::map<long long, std::vector<long long>> tasks;  // array -> its pending tasks
  for (const auto& j : jobs)
    if (pending_task(j))
      tasks[j["array_job"].get<long long>()].push_back(j["array_task"].get<long long>());
  json out = json::array();
  std::set<long long> shown;
  for (const auto& j : jobs) {
    if (!pending_task(j) || tasks[j["array_job"].get<long long>()].size() < 2) {
      out.push_back(j);
      continue;
    }
    const long long array = j["array_job"].get<long long>();
    if (!shown.insert(array).second) continue;
    json row = j;
    row["id"] = std::to_string(array) + "_[" + task_ranges(tasks[array]) + "]";
    out.push_back(std::move(row));
  }
  return out;
}

std::string jobs_table(const json& reply, const ViewOptions& o) {
  // The DEADLINE column only where some job has one; START with --start.
  bool deadlines = false;
  for (const auto& j : items(reply, "jobs"))
    if (const json* by = field(j, {"complete_by"}); by && by->is_string()) deadlines = true;
  std::vector<Table::Column> cols = {{"ID", 0, true},       {"NAME", cap(o, 32)},
                                     {"USER", cap(o, 16)},  {"NAMESPACE", cap(o, 16)},
                                     {"QUEUE", cap(o, 20)}, {"STATE"},
                                     {"GPUS", 0, true},     {"AGE", 0, true}};
  if (o.start) cols.push_back({"START"});
  if (deadlines) cols.push_back({"DEADLINE", 0, true});
  cols.push_back({"NODE(S)", cap(o, 30)});
  cols.push_back({"REASON", cap(o, 60)});
  Table t(std::move(cols));
  const json listed =
      o.array_tasks ? items(reply, "jobs") : collapse_pending_arrays(items(reply, "jobs"));
  for (const auto& j : listed) {
    std::string gpus = "-";
    if (const json* m = field(j, {"gpu_milli"}); m && m->is_number())
      gpus = format_milli(m->get<long long>());
    else if (const json* g = field(j, {"gpus"}))
      gpus = text_of(g);
    // A pending job's reason is text (or a structured object with a message); an ended job
    // without one shows how it ended.
    std::string reason = "-";
    if (const json* r = field(j, {"reason"})) {
      const json* msg = r->is_object() ? field(*r, {"message", "text", "reason"}) : r;
      reason = msg ? text_of(msg) : r->dump();
    } else if (const json* code = field(j, {"exit_code"}); code && code->is_number()) {
      reason = "exit code " + text_of(code);
    }
    std::string state = text_of(field(j, {"state"}));
    if (const json* to = field(j, {"timed_out"}); to && to->is_boolean() && to->get<bool>())
      state = "timeout";  // failed by its walltime: Slurm's TIMEOUT
    if (const json* n = field(j, {"preemptions"}); n && n->is_number() && n->get<long long>() > 0)
      state += " (" + std::to_string(n->get<long long>()) + "x preempted)";
    // A requeued (preempted) job keeps its old placement in the view; it runs nowhere now.
    const json* placement = field(j, {"placement"});
    if (const json* st = field(j, {"state"}); st && st->is_string() && *st == "pending")
      placement = nullptr;
    std::vector<std::string> row = {text_of(field(j, {"id"})),
                                    text_of(field(j, {"name"})),
                                    text_of(field(j, {"user"})),
                                    text_of(field(j, {"namespace"})),
                                    text_of(field(j, {"queue", "cluster_queue"})),
                                    state,
                                    gpus,
                                    age_since(field(j, {"submit_time"}), o.now_unix_s)};
    if (o.start) row.push_back(start_text(field(j, {"predicted_start"})));
    if (deadlines) row.push_back(deadline_cell(j, o.now_unix_s));
    row.push_back(placement ? placement_nodes(*placement, o.wide ? 1000 : 3) : "-");
    row.push_back(reason);
    t.add_row(std::move(row));
  }
  return t.render();
}

std::string queues_table(const json& reply, const ViewOptions& o) {
  Table t({{"NAME", cap(o, 24)},
           {"COHORT", cap(o, 20)},
           {"PENDING", cap(o, 48)},
           {"RUNNING", 0, true},
           {"GPU USED/NOMINAL", 0, true},
           {"BORROWED", 0, true},
           {"SHARE", 0, true},
           {"DEBT", 0, true}});
  for (const auto& q : items(reply, "queues")) {
    const Usage g = gpu_usage(q);
    const double used = g.used, nominal = g.nominal;
    double borrowed = g.borrowed;
    if (std::isnan(borrowed)) {
      if (const json* b = field(q, {"borrowed"}); b && b->is_number()) borrowed = b->get<double>();
    }
    std::string share = "-", debt = "-";
    if (const json* s = field(q, {"drf_share", "share"}); s && s->is_number())
      share = format_decimal(s->get<double>(), 3);
    if (const json* d = field(q, {"fairness_debt", "debt"}); d && d->is_number())
      debt = format_decimal(d->get<double>(), 2);
    t.add_row({text_of(field(q, {"name", "cluster_queue"})), text_of(field(q, {"cohort"})),
               pending_text(q), count_text(field(q, {"running", "admitted"})),
               gpu_number(used) + "/" + gpu_number(nominal), gpu_number(borrowed), share, debt});
  }
  return t.render();
}

std::string local_queues_table(const json& reply, const ViewOptions& o) {
  Table t({{"NAMESPACE", cap(o, 16)},
           {"QUEUE", cap(o, 24)},
           {"CLUSTERQUEUE", cap(o, 24)},
           {"PENDING", 0, true},
           {"RUNNING", 0, true},
           {"CQ PENDING", 0, true},
           {"CQ GPU USED/NOMINAL", 0, true}});
  for (const auto& q : items(reply, "local_queues")) {
    const Usage g = gpu_usage(q);
    t.add_row({text_of(field(q, {"namespace"})), text_of(field(q, {"name"})),
               text_of(field(q, {"cluster_queue"})), count_text(field(q, {"pending"})),
               count_text(field(q, {"running"})), count_text(field(q, {"cluster_queue_pending"})),
               gpu_number(g.used) + "/" + gpu_number(g.nominal)});
  }
  return t.render();
}

std::string nodes_table(const json& reply, const ViewOptions& o) {
  Table t({{"NAME", cap(o, 32)},
           {"READY"},
           {"GPUS", 0, true},
           {"ALLOC", 0, true},
           {"UTIL", 0, true},
           {"MODEL", cap(o, 24)},
           {"LAST-SEEN", 0, true}});
  for (const auto& n : items(reply, "nodes")) {
    const json* gpus = field(n, {"gpus"});
    std::string gpu_count = "-";
    std::string alloc = "-";
    std::vector<std::string> models;
    std::string util = "-";  // mean NVML utilisation of the GPUs that report one
    if (gpus && gpus->is_array()) {
      gpu_count = std::to_string(gpus->size());
      double sum = 0;
      int sampled = 0;
      for (const auto& g : *gpus)
        if (const json* u = field(g, {"utilization_pct"}); u && u->is_number()) {
          sum += u->get<double>();
          ++sampled;
        }
      if (sampled) util = format_decimal(sum / sampled, 0) + "%";
      // Allocation from the GPUs themselves: their allocated share, else "has a job".
      double allocated = 0;
      for (const auto& g : *gpus) {
        if (const json* m = field(g, {"allocated_milli", "gpu_milli"}); m && m->is_number()) {
          allocated += m->get<double>() / 1000.0;
        } else if (const json* a = field(g, {"allocated"}); a && a->is_number()) {
          allocated += a->get<double>();
        } else if (const json* job = field(g, {"job", "jobs"})) {
          if (!job->is_array() || !job->empty()) allocated += 1;
        }
        if (const json* m = field(g, {"model"}); m && m->is_string()) {
          std::string model = m->get<std::string>();
          if (std::find(models.begin(), models.end(), model) == models.end())
            models.push_back(model);
        }
      }
      alloc = format_decimal(allocated, 3);
    } else if (gpus) {
      gpu_count = text_of(gpus);
    }
    if (const json* gc = field(n, {"gpu_count"}); gc && gc->is_number()) gpu_count = text_of(gc);
    if (const json* a = field(n, {"gpus_allocated", "allocated"}); a && a->is_number())
      alloc = format_decimal(a->get<double>(), 3);
    if (models.empty())
      if (const json* m = field(n, {"model", "gpu_model"})) models.push_back(text_of(m));
    std::string model_text = "-";
    for (std::size_t i = 0; i < models.size(); ++i)
      model_text = (i ? model_text + "," : "") + models[i];
    std::string ready = "-";
    if (const json* r = field(n, {"ready"}); r && r->is_boolean())
      ready = r->get<bool>() ? "yes" : "no";
    else if (const json* s = field(n, {"state", "status"}))
      ready = text_of(s);
    // A node pool's node: "no (pool spot: absent)", "yes (pool spot: leaving)".
    if (const json* ps = field(n, {"pool_state"}); ps && ps->is_string() && *ps != "ready")
      ready += " (pool " + text_of(field(n, {"pool"})) + ": " + ps->get<std::string>() + ")";
    // An admin's hold: "yes (drained)" takes no new pods.
    if (const json* h = field(n, {"hold"}); h && h->is_string() && !h->get<std::string>().empty())
      ready += " (" + h->get<std::string>() + ")";
    // Either an age the server computed (its clock, so no skew) or a time to subtract.
    std::string last_seen = "never";
    if (const json* ago = field(n, {"last_seen_s_ago"}); ago && ago->is_number()) {
      last_seen = format_age(ago->get<double>()) + " ago";
    } else if (const json* seen = field(n, {"last_heartbeat", "last_seen", "last_heartbeat_unix_ms",
                                            "last_heartbeat_unix_ns"})) {
      last_seen = age_since(seen, o.now_unix_s);
      if (last_seen != "-") last_seen += " ago";
    }
    t.add_row({text_of(field(n, {"name", "node"})), ready, gpu_count, alloc, util, model_text,
               last_seen});
  }
  return t.render();
}

std::string submitted_text(const json& reply) {
  std::string out;
  for (const auto& j : items(reply, "jobs")) {
    out += "submitted job " + printable_text(text_of(field(j, {"id"})));
    if (const json* n = field(j, {"name"})) out += " (" + printable_text(text_of(n)) + ")";
    // The LocalQueue, as `sluice jobs` shows it, and its ClusterQueue where the name differs;
    // a server before local_queue says only the ClusterQueue.
    const json* lq = field(j, {"local_queue"});
    const json* cq = field(j, {"queue", "cluster_queue"});
    if (lq) {
      out += " to queue " + printable_text(text_of(lq));
      if (cq && text_of(cq) != text_of(lq))
        out += " (ClusterQueue " + printable_text(text_of(cq)) + ")";
    } else if (cq) {
      out += " to queue " + printable_text(text_of(cq));
    }
    out += "\n";
  }
  return out;
}

}  // namespace sluice::cli
