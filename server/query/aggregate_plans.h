// One small description per aggregate: how PlanQuery (planner.cc) fills the scan of that aggregate
// and which noisy components it releases, with their sensitivities and shares of the budget.
// Adding an aggregate means one AggregateKind, one entry in kAllAggregateKinds (query_spec.h) and
// one description here; the scan-totality test (tests/db/scan_totality_test.cc) then fails until
// it has shapes for the new kind.
#ifndef DPQ_SERVER_QUERY_AGGREGATE_PLANS_H_
#define DPQ_SERVER_QUERY_AGGREGATE_PLANS_H_

#include <functional>

#include "absl/status/status.h"
#include "server/query/dataset_schema.h"
#include "server/query/planner.h"
#include "server/query/query_spec.h"

namespace dpq::query {

// What an aggregate's planning step reads and fills. PlanQuery has validated everything common to
// all aggregates (privacy parameters, groups, the column's existence and type, per-unit limits)
// and charged the budget; `epsilon`/`delta` are what the released statistics may spend after
// partition selection took its share.
struct AggregateContext {
  QuerySpec& spec;             // normalised in place (bounds resolved or cleared)
  QueryPlan& plan;             // scan fields and components filled in
  const ColumnSchema* column;  // null for a count
  bool text_histogram;         // a histogram of a text column: a count grouped by its categories
  double epsilon, delta;
  int k, m;  // rows per unit and group, groups per unit
  // Appends a component with its per-group sensitivity (PlanQuery scales it to the vector's L1 or
  // L2 sensitivity over the m groups a unit can change) and the coordinates a unit can change.
  std::function<void(NoiseComponent::Statistic, double epsilon, double delta, double per_group,
                     int coordinates)>
      push;
};

struct AggregateDescription {
  AggregateKind kind;
  // Fills the scan (value column, clamp, centre, buckets, pre-aggregation) and the components.
  absl::Status (*plan)(AggregateContext& context);
  // The scan computes the sum of centred values (ScanPlan::sum_values); count-only releases never
  // compute a sum they do not use.
  bool sums_values;
};

// The description of `kind` (every kind of kAllAggregateKinds has one).
const AggregateDescription& DescriptionOf(AggregateKind kind);

// Resolves the clamp range: requested bounds must sit inside the declared ones, so an analyst can
// narrow but never widen what the data owner declared public. `per_unit_total` lifts the
// containment check for a pre-aggregated sum, whose bounds bound a unit's total.
absl::Status ResolveBounds(const ColumnSchema& column, QuerySpec& spec,
                           bool per_unit_total = false);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_AGGREGATE_PLANS_H_
