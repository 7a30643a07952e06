#include "server/store/known_ledgers.h"

#include <set>

namespace dpq::store {
namespace {

std::set<int64_t> PrincipalsOf(absl::Span<const Allocation* const> group) {
  std::set<int64_t> out;
  for (const Allocation* a : group) out.insert(a->principal_id);
  return out;
}

}  // namespace

bool KnownLedger::Decides(const Allocation& debit) const {
  return !ledger.budget.per_block && debit.request_id_is_fresh && debit.block_starts.empty() &&
         grants.count(debit.principal_id) > 0;
}

std::map<int64_t, GrantCap> KnownLedger::CapsFor(absl::Span<const Allocation* const> group) const {
  std::map<int64_t, GrantCap> caps;
  for (int64_t principal : PrincipalsOf(group)) {
    auto it = grants.find(principal);
    if (it != grants.end() && it->second.has_value()) caps.emplace(principal, it->second->cap);
  }
  return caps;
}

ExpectedRows KnownLedger::ExpectFor(absl::Span<const Allocation* const> group) const {
  ExpectedRows expected;
  expected.ledger_image = image;
  for (int64_t principal : PrincipalsOf(group)) {
    expected.principals.push_back(principal);
    auto it = grants.find(principal);
    if (it != grants.end() && it->second.has_value()) {
      expected.grant_images.push_back(it->second->image);
    }
  }
  return expected;
}

KnownLedger KnownLedger::After(const DebitAdmission& admission,
                               const WrittenImages& written) const {
  KnownLedger next;
  next.ledger = admission.ledger;
  next.image = written.ledger_image;
  next.grants = grants;
  for (const auto& [principal, image] : written.grant_images) {
    auto charged = admission.grants.find(principal);
    if (charged == admission.grants.end()) {
      next.grants.erase(principal);  // cannot happen; forgetting it is always safe
      continue;
    }
    KnownGrant g{charged->second, image};
    g.cap.charged = false;
    g.cap.blocks.clear();
    next.grants[principal] = std::move(g);
  }
  return next;
}

KnownLedgers& KnownLedgers::Shared() {
  static KnownLedgers* const shared = new KnownLedgers();  // never destroyed: used until exit
  return *shared;
}

absl::optional<KnownLedger> KnownLedgers::Take(const void* owner, int64_t population_id) {
  absl::MutexLock lock(&mu_);
  auto it = known_.find(Key(owner, population_id));
  if (it == known_.end()) return absl::nullopt;
  absl::optional<KnownLedger> out(std::move(it->second));
  known_.erase(it);
  return out;
}

void KnownLedgers::Put(const void* owner, int64_t population_id, KnownLedger known) {
  absl::MutexLock lock(&mu_);
  known_.insert_or_assign(Key(owner, population_id), std::move(known));
}

void KnownLedgers::Count(bool written_in_one_trip) {
  absl::MutexLock lock(&mu_);
  ++(written_in_one_trip ? stats_.one_trip : stats_.changed);
}

KnownLedgers::Stats KnownLedgers::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace dpq::store
