// Domain types of one central-DP query, independent of the wire format (proto) and of SQL.
#ifndef DPQ_SERVER_QUERY_QUERY_SPEC_H_
#define DPQ_SERVER_QUERY_QUERY_SPEC_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "server/query/expression/expression.h"
#include "server/query/join_source.h"

namespace dpq::query {

enum class AggregateKind { kCount, kSum, kMean, kVariance, kStddev, kQuantile, kHistogram };
// Every AggregateKind. The scan-totality test plans and scans each of them, and fails for one it
// has no query shapes for; it also fails when the SQL analyzer lowers to a kind missing here.
inline constexpr AggregateKind kAllAggregateKinds[] = {
    AggregateKind::kCount,    AggregateKind::kSum,    AggregateKind::kMean,
    AggregateKind::kVariance, AggregateKind::kStddev, AggregateKind::kQuantile,
    AggregateKind::kHistogram};
enum class MechanismKind { kLaplace, kGaussian };

// "count", "sum", "mean", "variance", "stddev", "quantile", "histogram"
absl::string_view AggregateName(AggregateKind kind);
absl::string_view MechanismName(MechanismKind kind);  // "laplace", "gaussian"

// What the analyst asked for, after decoding but before any validation.
struct QuerySpec {
  std::string dataset;
  AggregateKind aggregate = AggregateKind::kCount;
  std::string column;            // value column; unused for kCount
  absl::optional<double> lower;  // requested clamp bounds (declared bounds when absent)
  absl::optional<double> upper;
  double epsilon = 0;
  double delta = 0;
  MechanismKind mechanism = MechanismKind::kLaplace;
  int max_contributions = 1;          // rows kept per privacy unit (K)
  double confidence = 0.95;           // level of the reported interval
  std::string where;                  // optional row filter (server/query/filter); empty: none
  std::vector<double> quantiles;      // kQuantile: levels in [0, 1]
  std::vector<double> bins;           // kHistogram over a numeric column: bin edges
  std::vector<std::string> group_by;  // group-by columns; empty: one answer for all rows
  std::vector<std::string> keys;      // declared key domain of a single group-by column
  int max_partitions = 1;             // groups kept per privacy unit (M)
  // Per-unit pre-aggregation (kCount, kSum, kMean; max_contributions must be 1): each unit's rows
  // in a group are first counted (kCount), summed (kSum) or averaged (kMean), and that one
  // per-unit value is clamped to [lower, upper], as BigQuery / ZetaSQL's
  // contribution_bounds_per_group define it. For kSum the bounds bound the unit's total, so they
  // need not lie within the column's declared bounds; for kCount they are row counts, 0 <= lower
  // < upper (lower 0 with a whole upper U is planned as the row-level count with K = U).
  bool pre_aggregate = false;

  // Per-row expressions (server/query/expression; the SQL front end builds them, the planner
  // checks them against the schema). Untyped as built; null or empty: none.
  //  - value_expression: the value the aggregate reads instead of `column` (`SUM(age + 1)`); its
  //    clamp range is [lower, upper] when given, else the bounds derived from declared bounds.
  //    With kCount: the rows counted are those where it is not NULL.
  //  - row_condition: rows where it is not TRUE are dropped, as with `where` (both apply).
  //  - group_expressions: empty, or one entry per group_by name; a non-null entry makes that key
  //    the expression's value as text, and the group_by name is only its label.
  std::shared_ptr<const expression::Expr> value_expression;
  std::shared_ptr<const expression::Expr> row_condition;
  std::vector<std::shared_ptr<const expression::Expr>> group_expressions;
  // Release only the group keys (a SQL SELECT of keys without aggregates): the whole (epsilon,
  // delta) goes to partition selection, nothing else is released. Needs group_by.
  bool keys_only = false;
  // DP SQL's FROM a JOIN b ...: the tables read as one (join_source.h); `dataset` is then the first
  // private table's name, and the engine plans against ResolveJoin's joined schema. Null: one table.
  std::shared_ptr<const JoinRequest> join;
};

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_QUERY_SPEC_H_
