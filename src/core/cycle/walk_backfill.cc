// Backfill within a cycle's walk (steps 5 and 6b of cycle_walk.cc): the highest-ranked jobs
// that cannot be placed reserve the nodes they will get when running work ends by its
// walltime; a later job starts only if it delays none of those reservations, and a preemptor
// searches off the nodes of the reservations it would delay (docs/scheduling.md, "Reservation
// and backfill").
#include <algorithm>
#include <iterator>
#include <variant>
#include <vector>

#include "core/cycle/walk.h"

namespace sluice {

namespace {

bool uses_any(const Placement& p, const std::vector<NodeId>& sorted_nodes) {
  for (const auto& pod : p.pods)
    if (std::binary_search(sorted_nodes.begin(), sorted_nodes.end(), pod.node)) return true;
  return false;
}

}  // namespace

// 5a. A preemptor ranks after the reservations' holders (the walk reached them first) and must
// not delay them either: if it runs past a reservation's start (by its walltime), it looks for
// victims and room off that reservation's nodes (issue 19). Victims on reserved nodes may still
// be taken for their quota: freeing a reserved node early delays nobody.
bool Scheduler::Walk::must_avoid_reservation(const PendingJob& p, int q) {
  return binding_reservations(p, now_ + s_.walltime(p.job, q));
}

bool Scheduler::Walk::binding_reservations(const PendingJob& p, TimeNs end_ns) {
  binding_.clear();
  for (const Reservation& r : reservations_)
    if (r.job != p.job.id && end_ns > r.start_ns) binding_.push_back(&r);
  return !binding_.empty();
}

// Takes the binding reservations' ready nodes out of the working state (on), or puts back the
// ones it took (off). The placer sees only ready nodes.
void Scheduler::Walk::cordon_reservation(bool on) {
  if (on) {
    cordoned_.clear();
    for (const Reservation* r : binding_)
      for (NodeId n : r->nodes)
        if (alloc_.ready(n)) {
          cordoned_.push_back(n);
          alloc_.set_ready(n, false);
        }
  } else {
    for (NodeId n : cordoned_) alloc_.set_ready(n, true);
    cordoned_.clear();
  }
}

// The reason of a job that may not start because of reservation r.
void Scheduler::Walk::reservation_reason(int q, const Reservation& r) {
  attempt_.reason = PendingReason{};
  attempt_.reason.code = PendingCode::kReservation;
  attempt_.reason.queue = q;
  attempt_.reason.blocker = r.job;
  attempt_.reason.reserved_in_ns = r.start_ns - now_;
}

// 5. With reservations in force, a job starts only if, for each, it ends (by walltime) before
// the reservation starts or runs on nodes the reservation does not need (it is placed again off
// every reservation it would delay, if it must). False, with the reason, when it cannot.
bool Scheduler::Walk::backfill_allows(const PendingJob& p, int q, const Job& used) {
  if (!binding_reservations(p, now_ + s_.walltime(p.job, q))) return true;
  const Reservation* hit = nullptr;
  for (const Reservation* r : binding_)
    if (uses_any(attempt_.admission.placement, r->nodes)) {
      hit = r;
      break;
    }
  if (!hit) return true;
  // The flavors' nodes less the reserved ones, kept while the binding reservations and the
  // flavors stay the same (all lists ascending: merge walks, the result ascending too).
  // (Not kept for a job whose node selector narrows its nodes: the next job may differ.)
  // (A job whose pod sets got different flavors is not placed again: it waits.)
  const bool per_pod_set = !attempt_.admission.pod_set_flavors.empty();
  const bool constrained = constrains_nodes(used);
  const auto same_binding = [&] {
    if (backfill_for_.size() != binding_.size()) return false;
    for (size_t i = 0; i < binding_.size(); ++i)
      if (backfill_for_[i] != binding_[i]->job) return false;
    return true;
  };
  if (!per_pod_set &&
      (constrained || !same_binding() || backfill_flavors_ != attempt_.admission.flavors)) {
    const std::vector<NodeId>* from =
        &s_.assigner_.nodes_for(used, attempt_.admission.flavors, attempt_.scratch).ids();
    std::vector<NodeId> others;
    for (const Reservation* r : binding_) {
      std::vector<NodeId> left;
      left.reserve(from->size());
      std::set_difference(from->begin(), from->end(), r->nodes.begin(), r->nodes.end(),
                          std::back_inserter(left));
      others = std::move(left);
      from = &others;
    }
    backfill_nodes_ =
        NodeSet(static_cast<int32_t>(s_.config_->cluster.nodes.size()), std::move(others));
    backfill_for_.clear();
    if (!constrained)
      for (const Reservation* r : binding_) backfill_for_.push_back(r->job);
    else
      backfill_for_.push_back(0);
    backfill_flavors_ = attempt_.admission.flavors;
  }
  if (!per_pod_set) {
    auto placed = s_.placer_.place(used, backfill_nodes_, alloc_);
    if (auto* pl = std::get_if<Placement>(&placed)) {
      attempt_.admission.placement = std::move(*pl);
      return true;
    }
  }
  reservation_reason(q, *hit);
  return false;
}

void Scheduler::Walk::reserve_more(const PendingJob& p, const std::vector<FlavorId>& flavors) {
  binding_.clear();
  for (const Reservation& r : reservations_) binding_.push_back(&r);
  cordon_reservation(true);
  Reservation r = s_.reserve(p, flavors, alloc_, result_.admitted, now_, attempt_.scratch);
  cordon_reservation(false);
  if (r.job) reservations_.push_back(std::move(r));
}

}  // namespace sluice
