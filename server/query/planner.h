// Turns a QuerySpec into a validated plan: what to scan (pushed down to SQL by the store) and which
// noisy components to release, each with its share of the budget and its server-derived sensitivity.
// Nothing the client sends is trusted as a sensitivity: it follows from the bounds and K alone.
#ifndef DPQ_SERVER_QUERY_PLANNER_H_
#define DPQ_SERVER_QUERY_PLANNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/query/query_spec.h"

namespace dpq::query {

// The exact (secret) statistics the store computes in one SQL statement:
//   count = number of kept rows (value not NULL when a value column is set),
//   sum   = sum over kept rows of (clamp(value, clamp_lower, clamp_upper) - center),
// keeping at most max_contributions rows per privacy unit, chosen at random.
struct ScanPlan {
  int64_t dataset_id = 0;
  std::string unit_column;
  std::string value_column;  // empty: count rows only
  double clamp_lower = 0;
  double clamp_upper = 0;
  double center = 0;
  int max_contributions = 1;
};

// One released noisy statistic.
struct NoiseComponent {
  enum class Statistic { kCount, kSum };
  Statistic statistic = Statistic::kCount;
  double epsilon = 0;
  double delta = 0;
  double sensitivity = 0;  // L1 for Laplace, L2 for Gaussian (equal for scalars)
};

struct QueryPlan {
  QuerySpec spec;  // normalised: bounds resolved, column cleared for count
  ScanPlan scan;
  // What the ledger charges, exactly (privacy_units.h); spec.epsilon/delta are their display values.
  int64_t epsilon_units = 0;
  int64_t delta_units = 0;
  // Mechanisms' parameters: their epsilons (deltas) sum to at most the charge.
  std::vector<NoiseComponent> components;
  // Canonical text of the normalised query (no data); equal fingerprints mean the same question.
  std::string fingerprint;
};

// Validates `spec` against `schema` and returns the plan. Errors are INVALID_ARGUMENT naming the
// field: epsilon (finite, in [1e-12, 1e6]), delta (0 for Laplace; in (0, 1) for Gaussian), confidence (in (0,1)),
// max_contributions (1..1000000), column (exists, numeric, for sum/mean), lower/upper (both or
// neither, finite, lower < upper, within the declared bounds; required when none are declared).
absl::StatusOr<QueryPlan> PlanQuery(const QuerySpec& spec, const DatasetSchema& schema);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_PLANNER_H_
