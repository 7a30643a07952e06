// Per-analyst caps (population_caps, migration 0014) and what each analyst has spent against
// them, for the metrics scrape (dpq_analyst_epsilon_cap and _remaining).
#ifndef DPQ_SERVER_STORE_CAP_FIGURES_H_
#define DPQ_SERVER_STORE_CAP_FIGURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/store/database.h"

namespace dpq::store {

struct AnalystCap {
  std::string population, analyst;
  bool has_epsilon_cap = false, has_delta_cap = false;
  // Units of server/query/privacy_units.h; spent is what counts against the cap (view cap_spend,
  // migration 0017): the analyst's spend on the population, or on a per-block population the
  // most the analyst spent in any one block (the cap limits each block). It survives a revoke and
  // grant again, so a cap cannot be reset that way.
  int64_t epsilon_cap_units = 0, epsilon_spent_units = 0, delta_cap_units = 0,
          delta_spent_units = 0;
};

// Every cap row with a cap (analyst not revoked, population not dropped), ordered by
// population, then analyst. One read-only statement.
absl::StatusOr<std::vector<AnalystCap>> ListAnalystCaps(Database* db);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_CAP_FIGURES_H_
