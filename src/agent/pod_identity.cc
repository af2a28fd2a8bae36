#include "agent/pod_identity.h"

#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <vector>

#include "core/model/fnv1a.h"

namespace sluice::agent {
namespace {

constexpr uint32_t kMaxId = 0x7fffffff;  // the kernel's ids are 32-bit; -1 means "unchanged"

std::optional<uint32_t> parse_id(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v > kMaxId)
    return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::string range_text(uint32_t first, uint32_t last) {
  return std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace

Result<std::pair<std::string, UnixIds>> parse_pod_uid(const std::string& spec) {
  const auto bad =
      Error{"bad --pod-uid \"" + spec + "\" (want NAMESPACE=UID or NAMESPACE=UID:GID)"};
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) return bad;
  const std::string ids = spec.substr(eq + 1);
  const size_t colon = ids.find(':');
  auto uid = parse_id(ids.substr(0, colon));
  auto gid = colon == std::string::npos ? uid : parse_id(ids.substr(colon + 1));
  if (!uid || !gid) return bad;
  return std::make_pair(spec.substr(0, eq), UnixIds{*uid, *gid});
}

Result<std::pair<uint32_t, uint32_t>> parse_uid_range(const std::string& spec) {
  if (spec == "none") return std::make_pair(uint32_t{1}, uint32_t{0});
  const size_t dash = spec.find('-');
  auto first = dash == std::string::npos ? std::nullopt : parse_id(spec.substr(0, dash));
  auto last = dash == std::string::npos ? std::nullopt : parse_id(spec.substr(dash + 1));
  if (!first || !last || *last < *first || *first == 0)
    return Error{"bad --pod-uid-range \"" + spec +
                 "\" (want FIRST-LAST with 0 < FIRST <= LAST, e.g. 60000-65535, or none)"};
  return std::make_pair(*first, *last);
}

uint32_t hashed_namespace_uid(const std::string& ns, uint32_t first, uint32_t last) {
  const uint64_t h = fnv1a64(ns);  // stable across machines and builds
  const uint64_t size = uint64_t{last} - first + 1;
  return first + static_cast<uint32_t>(h % size);
}

std::string unix_user_name(uint32_t uid) {
  // One passwd lookup per uid and process, not one per pod (NSS may be a file read or LDAP).
  static std::mutex mu;
  static std::map<uint32_t, std::string> names;  // bounded by the uids pods run as
  std::lock_guard lock(mu);
  auto it = names.find(uid);
  if (it != names.end()) return it->second;
  std::string name = "sluice-" + std::to_string(uid);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found && pw.pw_name)
    name = pw.pw_name;
  return names.emplace(uid, name).first->second;
}

IdentityResolver::IdentityResolver(IdentityOptions options, const std::string& claims_path)
    : options_(std::move(options)) {
  if (!claims_path.empty()) claims_file_.emplace(claims_path);
}

Result<std::unique_ptr<IdentityResolver>> IdentityResolver::create(IdentityOptions options,
                                                                   const std::string& claims_path) {
  std::unique_ptr<IdentityResolver> r(new IdentityResolver(std::move(options), claims_path));
  // An explicit entry inside the range could be another namespace's hashed uid.
  for (const auto& [ns, ids] : r->options_.namespaces) {
    if (r->in_range(ids.uid))
      return Error{"--pod-uid " + ns + "=" + std::to_string(ids.uid) + ": inside --pod-uid-range " +
                   range_text(r->options_.range_first, r->options_.range_last) +
                   ", where it could be another namespace's uid; pick one outside it"};
  }
  if (r->claims_file_) {
    std::string why;
    auto doc = r->claims_file_->load(&why);
    // One torn slot falls back to the other; none readable: refuse rather than forget whose
    // files a uid owns.
    if (!doc && !why.empty()) return Error{"cannot read " + r->claims_file_->path() + ": " + why};
    try {
      if (doc)
        for (const auto& [uid, ns] : doc->at("claims").items())
          r->claims_[static_cast<uint32_t>(std::stoul(uid))] = ns.get<std::string>();
    } catch (const std::exception& e) {
      return Error{"cannot read " + r->claims_file_->path() + ": " + e.what()};
    }
  }
  return r;
}

bool IdentityResolver::in_range(int64_t uid) const {
  return options_.range_first <= options_.range_last && uid >= options_.range_first &&
         uid <= options_.range_last;
}

Result<UnixIds> IdentityResolver::namespace_ids(const std::string& ns) {
  if (auto it = options_.namespaces.find(ns); it != options_.namespaces.end()) return it->second;
  if (options_.range_first > options_.range_last)
    return Error{"namespace \"" + ns +
                 "\" has no --pod-uid entry on this agent and there is no --pod-uid-range"};
  const uint32_t uid = hashed_namespace_uid(ns, options_.range_first, options_.range_last);
  std::lock_guard lock(mu_);
  auto [it, fresh] = claims_.emplace(uid, ns);
  if (it->second != ns)
    return Error{"namespaces \"" + it->second + "\" and \"" + ns + "\" both hash to uid " +
                 std::to_string(uid) + " of --pod-uid-range " +
                 range_text(options_.range_first, options_.range_last) + "; give \"" + ns +
                 "\" its own --pod-uid entry"};
  if (fresh && claims_file_) {
    nlohmann::json claims = nlohmann::json::object();
    for (const auto& [u, n] : claims_) claims[std::to_string(u)] = n;
    std::string why;
    if (!claims_file_->save({{"version", 1}, {"claims", claims}}, &why)) {
      claims_.erase(it);  // not durable: a restart could hand the uid to another namespace
      return Error{"cannot record the uid of namespace \"" + ns + "\": " + why};
    }
  }
  return UnixIds{uid, uid};
}

Result<PodIdentity> IdentityResolver::resolve(const proto::Assignment& a) {
  UnixIds ids;
  if (a.run_as_uid >= 0) {
    // The server's choice: the submitter's uid, or a securityContext its token allows.
    if (a.run_as_uid > kMaxId || a.run_as_gid > kMaxId)
      return Error{"run_as_uid/run_as_gid out of range"};
    if (in_range(a.run_as_uid))
      return Error{"run_as_uid " + std::to_string(a.run_as_uid) + " is inside --pod-uid-range " +
                   range_text(options_.range_first, options_.range_last) +
                   " (the namespaces' uids on this agent)"};
    ids.uid = static_cast<uint32_t>(a.run_as_uid);
    ids.gid = static_cast<uint32_t>(a.run_as_gid >= 0 ? a.run_as_gid : a.run_as_uid);
  } else {
    auto n = namespace_ids(a.job_namespace);
    if (!n) return Error{n.error()};
    ids = *n;
  }
  if ((ids.uid == 0 || ids.gid == 0) && !a.allow_root)
    return Error{"pods may not run as root (uid " + std::to_string(ids.uid) + ", gid " +
                 std::to_string(ids.gid) + "): the ClusterQueue does not allow it (allowRootPods)"};
  return PodIdentity{ids.uid, ids.gid, unix_user_name(ids.uid)};
}

std::string IdentityResolver::describe() const {
  std::string out = "pods run as the submitter's uid when the server names one, else ";
  if (!options_.namespaces.empty())
    out += std::to_string(options_.namespaces.size()) + " namespace(s) from --pod-uid, else ";
  if (options_.range_first <= options_.range_last)
    out += "a uid per namespace in " + range_text(options_.range_first, options_.range_last);
  else
    out += "nothing (namespaces without --pod-uid are refused)";
  return out;
}

}  // namespace sluice::agent
