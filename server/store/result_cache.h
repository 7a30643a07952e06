// The result cache: an identical query (same fingerprint: normalised plan, filter, epsilon and
// delta) asked again by the SAME analyst on the same dataset version is answered with the noisy
// answer that analyst was released before, for no budget. Releasing it again to them reveals
// nothing new (post-processing of a value they hold). The cache is the audit table itself: only
// released noisy answers are ever stored, never exact aggregates, and loading rows bumps the
// version, so answers computed on older data never match.
//
// Why per analyst (issue 11): served to another analyst, a cached answer would bypass that
// analyst's cap (grants.*_cap_units: they would receive a release their own budget never paid
// for) and its `cached` flag would tell them that somebody else asked the same question. Both
// are functions of other principals' activity, not of the request, the grant and the analyst's
// own history. Another analyst asking the same question gets, and pays for, a fresh release.
#ifndef DPQ_SERVER_STORE_RESULT_CACHE_H_
#define DPQ_SERVER_STORE_RESULT_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/database.h"

namespace dpq::store {

class ResultCache {
 public:
  explicit ResultCache(Database* db) : db_(db) {}

  // The request id of `principal_id`'s first answered allocation of `dataset_id` with this
  // fingerprint on `dataset_version`, if any (read it with BudgetLedger::FindAllocation). An
  // allocation charged but not answered (its scan failed) is no cache entry.
  absl::StatusOr<absl::optional<std::string>> FindRequestId(int64_t dataset_id,
                                                            const std::string& fingerprint,
                                                            int64_t dataset_version,
                                                            int64_t principal_id);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_RESULT_CACHE_H_
