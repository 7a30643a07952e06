#include "server/api/query_admission.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/base/limit_error.h"

namespace dpq::api {

QueryAdmission::Ticket::~Ticket() {
  if (owner_ != nullptr) owner_->Release(principal_);
}

absl::StatusOr<QueryAdmission::Ticket> QueryAdmission::Admit(int64_t principal, absl::Time now) {
  absl::MutexLock lock(&mu_);
  State& s = states_[principal];
  // A sliding window, exact: at most max_per_minute admissions in any 60 s (a token bucket would
  // let twice that through across a refill). Memory per analyst is bounded by the limit.
  while (!s.admitted.empty() && s.admitted.front() <= now - absl::Minutes(1))
    s.admitted.pop_front();
  if (limits_.max_concurrent > 0 && s.in_flight >= limits_.max_concurrent) {
    return LimitError(absl::StrCat(
        "too many queries in flight: at most ", limits_.max_concurrent,
        " per analyst at once (dpqd --max-concurrent-queries); wait for one to finish"));
  }
  if (limits_.max_per_minute > 0 && static_cast<int>(s.admitted.size()) >= limits_.max_per_minute) {
    const double wait =
        std::ceil(absl::ToDoubleSeconds(s.admitted.front() + absl::Minutes(1) - now));
    return LimitError(
        absl::StrCat("query rate limit: at most ", limits_.max_per_minute,
                     " queries per analyst per minute (dpqd --max-queries-per-minute); retry in ",
                     std::max(1.0, wait), " s"));
  }
  ++s.in_flight;
  if (limits_.max_per_minute > 0) s.admitted.push_back(now);
  return Ticket(this, principal);
}

void QueryAdmission::Release(int64_t principal) {
  absl::MutexLock lock(&mu_);
  auto it = states_.find(principal);
  if (it == states_.end()) return;
  --it->second.in_flight;
  // Forget idle analysts whose window is empty, so the map holds only recent callers.
  if (it->second.in_flight == 0 && it->second.admitted.empty()) states_.erase(it);
}

int QueryAdmission::InFlight(int64_t principal) const {
  absl::MutexLock lock(&mu_);
  auto it = states_.find(principal);
  return it == states_.end() ? 0 : it->second.in_flight;
}

}  // namespace dpq::api
