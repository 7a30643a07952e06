// The result cache (issue 5): an identical query (same fingerprint: normalised plan, filter, epsilon
// and delta) on the same dataset version is answered with the noisy answer released before, for no
// budget. Releasing it again reveals nothing new (post-processing of a released value). The cache is
// the audit table itself: only released noisy answers are ever stored, never exact aggregates, and
// loading rows bumps the version, so answers computed on older data never match.
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

  // The request id of the first committed allocation of `dataset_id` with this fingerprint on
  // `dataset_version`, if any (read it with BudgetLedger::FindAllocation).
  absl::StatusOr<absl::optional<std::string>> FindRequestId(int64_t dataset_id,
                                                            const std::string& fingerprint,
                                                            int64_t dataset_version);

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_RESULT_CACHE_H_
