// The result cache: an identical query (same fingerprint: normalised plan, filter, epsilon and
// delta) asked again by the SAME analyst on the same dataset version is answered with the noisy
// answer that analyst was released before, for no budget. Releasing it again to them reveals
// nothing new (post-processing of a value they hold). The cache is the audit table itself: only
// released noisy answers are ever stored, never exact aggregates, and loading rows bumps the
// version, so answers computed on older data never match.
//
// Why per analyst: served to another analyst, a cached answer would bypass that
// analyst's cap (grants.*_cap_units: they would receive a release their own budget never paid
// for) and its `cached` flag would tell them that somebody else asked the same question. Both
// are functions of other principals' activity, not of the request, the grant and the analyst's
// own history. Another analyst asking the same question gets, and pays for, a fresh release.
#ifndef DPQ_SERVER_STORE_RESULT_CACHE_H_
#define DPQ_SERVER_STORE_RESULT_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/store/database.h"

namespace dpq::store {

// What ResultCache::Probe found: the request id of an allocation to read with
// BudgetLedger::FindAllocation, and whether it is the caller's own request id.
struct CacheHit {
  std::string request_id;
  bool own = false;  // the caller's request id was already charged: the answer is a replay
};

// A probe made by a query's first statement (DatasetStore::GetWithGrant) for a request id the
// server drew, so no own id: the fingerprint it looked for, on the population and dataset version
// that statement read, and the hit's request id if there is one.
struct ProbedCache {
  std::string fingerprint;
  absl::optional<std::string> request_id;
};

// The probe as a statement returning (request_id, own) for at most one row; the arguments are SQL
// expressions (parameters or columns of the caller's statement). ResultCache::Probe and
// GetWithGrant's probe are this text, so they cannot disagree on what a hit is.
std::string CacheProbeSql(absl::string_view population_id, absl::string_view fingerprint,
                          absl::string_view dataset_version, absl::string_view principal_id,
                          absl::string_view own_request_id);

class ResultCache {
 public:
  explicit ResultCache(Database* db) : db_(db) {}
  // Virtual for one reason: a db test interleaves a concurrent twin of the request between the
  // engine's replay check and this probe (query_engine_test), the race the own-id rule closes.
  virtual ~ResultCache() = default;

  // `principal_id`'s allocation of `population_id` with this fingerprint on `dataset_version`:
  //   - the one charged under `own_request_id`, answered or not, if it exists (own = true): a twin
  //     of the request (the same id retried at once on another dpqd) charged it since the
  //     engine's replay check, so this reply is a replay of that charge, never a cache hit;
  //   - else the first answered one (own = false), the cache hit. An allocation charged but not
  //     answered (its scan failed) is no cache entry.
  // `own_request_id` is "" when the server drew the id (no earlier use can exist). One statement,
  // served by the audit_cache_lookup index (migration 0005).
  virtual absl::StatusOr<absl::optional<CacheHit>> Probe(int64_t population_id,
                                                         const std::string& fingerprint,
                                                         int64_t dataset_version,
                                                         int64_t principal_id,
                                                         const std::string& own_request_id);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_RESULT_CACHE_H_
