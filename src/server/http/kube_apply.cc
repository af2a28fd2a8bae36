#include "server/http/kube_apply.h"

#include <set>

namespace sluice::server::kube {

using nlohmann::json;

namespace apply_detail {

using Path = std::vector<std::string>;
using Paths = std::set<Path>;

// The leaves of `j` under `at`: maps are walked (an empty one is a leaf); lists (atomic) and
// scalars are leaves.
void leaves(const json& j, Path& at, Paths& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) {
      at.push_back(k);
      leaves(v, at, out);
      at.pop_back();
    }
    return;
  }
  out.insert(at);
}

// The fields an applied configuration sets: all but apiVersion, kind, status and the
// metadata that names the object (its labels and annotations are fields).
Paths fields_of(const json& applied) {
  Paths out;
  Path at;
  for (const auto& [k, v] : applied.items()) {
    if (k == "apiVersion" || k == "kind" || k == "status") continue;
    if (k == "metadata") {
      for (const char* f : {"labels", "annotations"})
        if (v.is_object() && v.contains(f)) {
          at = {"metadata", f};
          leaves(v[f], at, out);
        }
      continue;
    }
    at = {k};
    leaves(v, at, out);
  }
  return out;
}

// managedFields' fieldsV1: {"f:spec": {"f:cohort": {}}}.
json fields_v1(const Paths& paths) {
  json out = json::object();
  for (const auto& p : paths) {
    json* at = &out;
    for (const auto& k : p) at = &(*at)["f:" + k];
    if (at->is_null()) *at = json::object();
  }
  return out;
}

void walk_v1(const json& j, Path& at, Paths& out) {
  bool child = false;
  if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      if (k.rfind("f:", 0) != 0) continue;
      child = true;
      at.push_back(k.substr(2));
      walk_v1(v, at, out);
      at.pop_back();
    }
  if (!child && !at.empty()) out.insert(at);
}

Paths paths_of(const json& v1) {
  Paths out;
  Path at;
  walk_v1(v1, at, out);
  return out;
}

// Whether one path is the other or under it.
bool overlaps(const Path& a, const Path& b) {
  const size_t n = std::min(a.size(), b.size());
  return std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
}

const json* find(const json& j, const Path& p) {
  const json* at = &j;
  for (const auto& k : p) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &(*at)[k];
  }
  return at;
}

void set(json& j, const Path& p, const json& v) {
  json* at = &j;
  for (const auto& k : p) {
    if (!at->is_object()) *at = json::object();
    at = &(*at)[k];
  }
  *at = v;
}

void erase(json& j, const Path& p) {
  if (p.empty()) return;
  json* at = &j;
  for (size_t i = 0; i + 1 < p.size(); ++i) {
    if (!at->is_object() || !at->contains(p[i])) return;
    at = &(*at)[p[i]];
  }
  if (at->is_object()) at->erase(p.back());
}

std::string dotted(const Path& p) {
  std::string out;
  for (const auto& k : p) out += "." + k;
  return out;
}

// A string field of `j`, "" when it is missing or not a string.
std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Whether applying `applied`'s field p claims field q: one is under the other, but an empty
// map applied claims the map, not what is under it.
bool claims(const Path& p, const Path& q, const json& applied) {
  if (!overlaps(p, q)) return false;
  const json* v = find(applied, p);
  return !(q.size() > p.size() && v && v->is_object() && v->empty());
}

struct Manager {
  json entry;
  Paths paths;
  bool changed = false;
};

// Another Apply manager's field that `applied` gives another value: a conflict each; with
// force, the field is taken from that manager.
std::vector<ApplyConflict> take_over(const Paths& mine, const json& object, const json& applied,
                                     std::vector<Manager>& others, bool force) {
  std::vector<ApplyConflict> out;
  for (const auto& p : mine) {
    const json* now = find(object, p);
    const json* want = find(applied, p);
    for (auto& o : others) {
      if (text(o.entry, "operation") != "Apply") continue;
      for (auto it = o.paths.begin(); it != o.paths.end();) {
        if (!claims(p, *it, applied) || (now && *now == *want)) {
          ++it;
          continue;
        }
        out.push_back({text(o.entry, "manager"), dotted(*it)});
        if (!force) {
          ++it;
          continue;
        }
        it = o.paths.erase(it);
        o.changed = true;
      }
    }
  }
  return out;
}

// managedFields in their order: this manager's entry where it was (else last), the others' as
// they are now (those that own nothing any more dropped).
json managed_fields(const json* mf, const std::string& manager, std::vector<Manager>& others,
                    json entry) {
  json fields = json::array();
  size_t next = 0;
  bool placed = false;
  if (mf && mf->is_array())
    for (const auto& e : *mf) {
      if (!e.is_object()) continue;
      if (text(e, "manager") == manager && text(e, "operation") == "Apply") {
        fields.push_back(entry);
        placed = true;
        continue;
      }
      Manager& o = others[next++];
      if (o.paths.empty()) continue;
      if (o.changed) o.entry["fieldsV1"] = fields_v1(o.paths);
      fields.push_back(std::move(o.entry));
    }
  if (!placed) fields.push_back(std::move(entry));
  return fields;
}

}  // namespace apply_detail

ApplyResult server_side_apply(const json& live, const json& applied, const std::string& manager,
                              bool force, const std::string& time) {
  using namespace apply_detail;
  ApplyResult r;
  const Paths mine = fields_of(applied);
  json object = live;
  if (object.is_null()) {
    const json meta = applied.value("metadata", json::object());
    object = {{"apiVersion", applied.value("apiVersion", json())},
              {"kind", applied.value("kind", json())},
              {"metadata", {{"name", meta.is_object() ? meta.value("name", json()) : json()}}}};
    if (meta.is_object() && meta.contains("namespace"))
      object["metadata"]["namespace"] = meta["namespace"];
  }
  Paths before;  // what this manager applied last time
  std::vector<Manager> others;
  const json* mf = find(live, {"metadata", "managedFields"});
  if (mf && mf->is_array())
    for (const auto& e : *mf) {
      if (!e.is_object()) continue;
      Paths ps = paths_of(e.contains("fieldsV1") ? e["fieldsV1"] : json::object());
      if (text(e, "manager") == manager && text(e, "operation") == "Apply")
        before = std::move(ps);
      else
        others.push_back({e, std::move(ps)});
    }
  r.conflicts = take_over(mine, object, applied, others, force);
  if (!force && !r.conflicts.empty()) return r;
  r.conflicts.clear();
  // What it applied before and no more, that no one else owns, goes.
  for (const auto& q : before) {
    bool kept = false;
    for (const auto& p : mine) kept = kept || claims(p, q, applied);
    for (const auto& o : others)
      for (const auto& p : o.paths) kept = kept || overlaps(p, q);
    if (!kept) erase(object, q);
  }
  for (const auto& p : mine) {
    const json& want = *find(applied, p);
    const json* now = find(object, p);
    if (want.is_object() && want.empty() && now && now->is_object()) continue;  // kept as is
    set(object, p, want);
  }
  // A manager's entry keeps its time while what it owns and the object stay the same.
  json stamp = time;
  if (mf && before == mine) {
    json a = object, b = live;
    a["metadata"].erase("managedFields");
    b["metadata"].erase("managedFields");
    if (a == b)
      for (const auto& e : *mf)
        if (e.is_object() && text(e, "manager") == manager && e.contains("time")) stamp = e["time"];
  }
  json entry = {
      {"manager", manager}, {"operation", "Apply"},     {"apiVersion", text(applied, "apiVersion")},
      {"time", stamp},      {"fieldsType", "FieldsV1"}, {"fieldsV1", fields_v1(mine)}};
  object["metadata"]["managedFields"] = managed_fields(mf, manager, others, std::move(entry));
  r.object = std::move(object);
  return r;
}

}  // namespace sluice::server::kube
