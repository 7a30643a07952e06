#include "server/engine/recent_callers.h"

namespace dpq::engine {

absl::optional<store::Principal> RecentCallers::Find(const std::string& token_sha256,
                                                     absl::Time now) const {
  absl::MutexLock lock(&mu_);
  auto it = by_token_.find(token_sha256);
  if (it == by_token_.end() || now - it->second.looked_up >= ttl_ || now < it->second.looked_up) {
    return absl::nullopt;
  }
  store::Principal p = it->second.principal;
  p.token_to_confirm = token_sha256;
  return p;
}

void RecentCallers::Remember(const std::string& token_sha256, const store::Principal& principal,
                             absl::Time now) {
  if (principal.role != store::Role::kAnalyst) return;
  absl::MutexLock lock(&mu_);
  if (by_token_.size() >= capacity_) by_token_.clear();
  store::Principal p = principal;
  p.token_to_confirm.clear();
  by_token_[token_sha256] = Entry{std::move(p), now};
}

}  // namespace dpq::engine
