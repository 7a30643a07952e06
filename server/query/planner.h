// Turns a QuerySpec into a validated plan: what to scan (pushed down to SQL by the store) and which
// noisy components to release, each with its share of the budget and its server-derived sensitivity.
// Nothing the client sends is trusted as a sensitivity: it follows from the bounds and K alone.
#ifndef DPQ_SERVER_QUERY_PLANNER_H_
#define DPQ_SERVER_QUERY_PLANNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/query/calendar.h"
#include "server/query/dataset_schema.h"
#include "server/query/query_spec.h"

namespace dpq::query {

// The key value of a group whose column is NULL (ScanPlan::null_group_columns): one NUL byte, which
// no PostgreSQL text value can hold, so it never equals a real value. The release codec stores it
// as JSON null, the API as ResultRow.null_keys, SQL as a NULL cell.
inline const std::string& NullGroupKey() {
  static const std::string* const kNull = new std::string(1, '\0');
  return *kNull;
}
inline bool IsNullGroupKey(const std::string& value) { return value == NullGroupKey(); }

// A date or timestamp group column read by calendar bucket (ScanPlan::group_calendars).
struct CalendarGrouping {
  ColumnType type = ColumnType::kDate;
  CalendarBucket bucket = CalendarBucket::kDay;
  std::string lower;  // the declared bounds in SQL text (calendar.h CalendarSqlText)
  std::string upper;
};

// The exact (secret) statistics the store computes in one SQL statement, per group:
//   count   = number of kept rows (value not NULL when a value column is set),
//   sum     = sum over kept rows of (clamp(value, clamp_lower, clamp_upper) - center),
//   sum_sq  = sum of the squares of those centred values (when sum_squares),
//   buckets = kept rows per bucket of the clamped value (when bucket_edges is set),
//   units   = distinct privacy units among the kept rows (when count_units),
// keeping at most max_contributions rows per privacy unit and group and at most max_partitions
// groups per unit, both chosen at random. Rows whose group value is NULL (in a column beyond
// null_group_columns), or outside a declared domain, are dropped before the choice.
struct ScanPlan {
  int64_t dataset_id = 0;
  // The dataset version the query was planned on: a read standby must have replayed at least this
  // version before it may serve the scan (store/scan_router.h).
  int64_t dataset_version = 0;
  std::string unit_column;
  std::string value_column;  // empty: count rows only
  double clamp_lower = 0;
  double clamp_upper = 0;
  double center = 0;
  // Compute `sum`. The planner sets it for sum, mean, variance and stddev only: count-only releases
  // (count, histograms, quantiles) never compute a sum they do not use.
  bool sum_values = true;
  int max_contributions = 1;
  std::vector<std::string> group_columns;  // empty: one group of all rows
  // Per group column: the values kept (its declared domain); empty: any value.
  std::vector<std::vector<std::string>> group_domains;
  // The first null_group_columns group columns keep rows whose value is NULL, as one group of
  // their own (key value NullGroupKey()), as ZetaSQL does; later columns drop them. The planner
  // sets it to the group_by columns when the keys are selected from the data (a NULL group is then
  // released only if selected); declared domains, and a text histogram's category, drop NULL.
  size_t null_group_columns = 0;
  int max_partitions = 1;
  bool sum_squares = false;
  // Bucket i is [e_i, e_{i+1}), the last one closed; values are clamped into [e_0, e_n] first.
  std::vector<double> bucket_edges;
  bool count_units = false;
  // The table's stored per-unit row rank may replace the random choice (store/bounding_sql.h has
  // the privacy argument): DatasetSchema::CanBoundByRowRank(value_column). The store still uses
  // the random choice for grouped or filtered scans.
  bool bound_by_row_rank = false;
  // Per-unit pre-aggregation (QuerySpec::pre_aggregate): the scan first reduces each unit's rows of
  // a group to one value, sum (pre_aggregate_mean false) or mean (true) of the raw values, and
  // clamps that value to [clamp_lower, clamp_upper]; the per-unit values are then the rows that
  // contribution bounding (one per unit and group, M groups per unit) and the sums work on.
  bool pre_aggregate = false;
  bool pre_aggregate_mean = false;
  // A pre-aggregated count (QuerySpec::pre_aggregate with kCount): the per-unit value is the
  // unit's row count in the group (no value column), clamped to [clamp_lower, clamp_upper], and
  // the released count is `sum` (sum_values set, center 0).
  bool pre_aggregate_count = false;
  // Per-row expressions, checked against the schema (QuerySpec's, server/query/expression):
  //  - value_expression: read instead of value_column (which is then empty); the scan keeps rows
  //    where it is not NULL and clamps its value into [clamp_lower, clamp_upper] like a column's;
  //    a count reads it only for the NULL test.
  //  - row_condition: rows where it is not TRUE are dropped (before the per-unit choice, as the
  //    filter's rows are).
  //  - group_expressions: empty or one per group column; a non-null entry makes the key the
  //    expression's text (group_columns[i] is then its label, never read as a column).
  std::shared_ptr<const expression::CheckedExpression> value_expression;
  std::shared_ptr<const expression::CheckedExpression> row_condition;
  std::vector<std::shared_ptr<const expression::CheckedExpression>> group_expressions;
  // Empty or one per group column: a set entry groups that date or timestamp column by calendar
  // bucket (QuerySpec group_by "column:bucket"): the key is the bucket's first day 'YYYY-MM-DD'
  // of the column clamped into its declared bounds, and the group domain is every bucket the
  // bounds span (declared keys: no partition selection).
  std::vector<absl::optional<CalendarGrouping>> group_calendars;
  // A joined schema's tables (DatasetSchema::join): the scan reads their join instead of the
  // dataset's table, never by stored row rank, and waits for every table's version. Null: one table.
  std::shared_ptr<const JoinSource> join;
  // DatasetSchema::shards: the scan reads each shard's partition (store/sharded_scan.h), and only
  // rows of loads up to dataset_version. Empty: the local table.
  std::vector<std::string> shards;
};

// One released noisy statistic (per group, for grouped queries).
struct NoiseComponent {
  enum class Statistic { kCount, kSum, kSumSquares, kBucketCounts };
  Statistic statistic = Statistic::kCount;
  double epsilon = 0;
  double delta = 0;
  // L1 for Laplace, L2 for Gaussian, of the whole released vector (all groups, all buckets).
  double sensitivity = 0;
  // Most coordinates of that vector one privacy unit can change (grid rounding adds one step
  // per changed coordinate).
  int changed_coordinates = 1;
};

// DP partition selection (Desfontaines et al. 2022) for group-by without a declared domain.
struct SelectionPlan {
  bool needed = false;
  double epsilon = 0;
  double delta = 0;
  int max_partitions = 1;
};

struct QueryPlan {
  QuerySpec spec;  // normalised: bounds resolved, column cleared for count
  ScanPlan scan;
  // What the ledger charges, exactly (privacy_units.h); spec.epsilon/delta are their display values.
  int64_t epsilon_units = 0;
  int64_t delta_units = 0;
  // Mechanisms' parameters: their epsilons (deltas) sum to at most the charge.
  std::vector<NoiseComponent> components;
  SelectionPlan selection;
  // kQuantile: the epsilon of ONE group's exponential-mechanism selection of all its quantiles
  // (the selection's budget divided over the max_partitions groups a unit can touch; dp_quantile.h
  // divides it over the quantiles). 0 with more than kMaxSelectedQuantiles levels: the quantiles
  // are then read off the noisy histogram (components[0]).
  double quantile_epsilon = 0;
  // The keys released when the domain is declared: the cross product of the group columns'
  // declared values, in declaration order. Empty when selection is needed or without group-by.
  std::vector<std::vector<std::string>> declared_keys;
  // Canonical text of the normalised query (no data); equal fingerprints mean the same question.
  std::string fingerprint;

  bool grouped() const { return !scan.group_columns.empty(); }
  // True when the released vector has more than one coordinate a unit can change.
  bool multi_valued() const;
};

inline constexpr int kQuantileBuckets = 1000;
// Quantile queries with at most this many levels choose them with the exponential mechanism; with
// more, the quantiles come from the noisy histogram's CDF (planner.cc, decisions.md).
inline constexpr int kMaxSelectedQuantiles = 5;
inline constexpr size_t kMaxQuantiles = 100;
inline constexpr size_t kMaxBinEdges = 1001;
inline constexpr size_t kMaxGroupColumns = 3;
inline constexpr size_t kMaxKeys = 10000;
inline constexpr int kMaxPartitionsLimit = 10000;

// Validates `spec` against `schema` and returns the plan. Errors are INVALID_ARGUMENT naming the
// field: epsilon (finite, in [1e-12, 1e6]), delta (0 for Laplace unless partition selection needs
// it; in (0, 1) for Gaussian and for selection), confidence (in (0,1)), max_contributions
// (1..1000000), max_partitions (1..10000), column (exists, numeric for sum/mean/variance/stddev/
// quantile; numeric or text for histogram), lower/upper (both or neither, magnitude <= 1e15
// (kMaxBoundMagnitude), lower < upper, within the declared bounds; required when none are
// declared), quantiles (1..100 levels in [0, 1]), bins (2..1001 strictly increasing edges of
// magnitude <= 1e15; none on a text column), group_by (1..3 distinct existing columns other than
// the privacy unit), keys (single group column only, 1..10000 distinct). Quantiles refuse the
// Gaussian mechanism (they use the exponential mechanism); histograms and group-by take it with a
// vector calibration (L2 sensitivity sqrt(M) per group; decisions.md).
// The plan is a function of `spec` and the declared schema only, never of the rows
// (docs/threat-model.md): every choice it makes (bounding method, SQL shape, epsilon split) is
// public.
absl::StatusOr<QueryPlan> PlanQuery(const QuerySpec& spec, const DatasetSchema& schema);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_PLANNER_H_
