// Analysts whose bearer token was looked up in the database less than `ttl` (30 s) ago, by token
// hash. A Query call admits its caller on the principal remembered here instead of looking the
// token up again (a round trip on every call), and marks it (Principal::token_to_confirm): the
// query's first statement (store::DatasetStore::GetWithGrant) confirms in the same round trip
// that the token still names that principal, unrevoked. So a revoked or rotated token is refused
// by every query whose first statement starts after the revocation commits, as it was when the
// lookup was a statement of its own; what ran on the remembered name before that is admission
// (the caller's own limits), which reads no data.
//
// Admins are never remembered: their calls change the database and are not confirmed later.
#ifndef DPQ_SERVER_ENGINE_RECENT_CALLERS_H_
#define DPQ_SERVER_ENGINE_RECENT_CALLERS_H_

#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

class RecentCallers {
 public:
  // An entry serves for `ttl` after its lookup: then the token is looked up again, which also
  // records its use (PrincipalStore::FindByTokenHash writes last_used_at at most once a minute).
  // At `capacity` entries the map is emptied (a burst of distinct tokens costs lookups, not
  // memory).
  explicit RecentCallers(absl::Duration ttl = absl::Seconds(30), size_t capacity = 10000)
      : ttl_(ttl), capacity_(capacity) {}

  // The analyst looked up by `token_sha256` less than ttl before `now`, with token_to_confirm set.
  absl::optional<store::Principal> Find(const std::string& token_sha256, absl::Time now) const;
  // Remembers `principal` (just looked up by `token_sha256` at `now`) if it is an analyst.
  void Remember(const std::string& token_sha256, const store::Principal& principal, absl::Time now);

 private:
  struct Entry {
    store::Principal principal;
    absl::Time looked_up;
  };
  const absl::Duration ttl_;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> by_token_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_RECENT_CALLERS_H_
