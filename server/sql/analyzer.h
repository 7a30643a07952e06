// Compiles a parsed DP SELECT (parser.h) onto the planner's QuerySpecs (server/query), so a SQL
// statement gets exactly the validation, sensitivity, bounding, noise, charge and audit of the
// equivalent flag queries. One part (QuerySpec) per aggregate call; the engine runs a statement's
// parts as one batch (one charge, one audit row). Pure: no data, no I/O.
//
// Semantics (BigQuery / ZetaSQL's differential-privacy clause; docs/decisions.md "DP SQL"):
//  - OPTIONS: epsilon (required), delta (default 0), max_groups_contributed (M, default 1),
//    privacy_unit_column (must name the dataset's privacy unit). epsilon is split evenly over the
//    parts in the ledger's exact units (they add up to it); delta over the parts that need DP
//    partition selection (grouped by a column without declared categories or key list), or over
//    every part with mechanism 'gaussian'. max_rows_contributed = K (instead of
//    max_groups_contributed: K rows per unit in the whole statement) with COUNT only, grouped by
//    one text column (the flag text histogram over its categories), by a WIDTH_BUCKET alone (the
//    numeric histogram) or not grouped (the count with K rows per unit).
//  - dpq extensions (flag parity, docs/decisions.md): OPTIONS mechanism = 'laplace' | 'gaussian'
//    (--mechanism; gaussian needs delta > 0, refused for the quantiles), max_rows_per_group = K
//    (--max-contributions of the row-clamped aggregates, default 5; no effect on COUNT and
//    per-unit SUM / AVG); SUM / AVG (col, contribution_bounds_per_row => (L, U)): rows clamped,
//    K rows per unit and group (the flag sum / mean, not pre-aggregated); a key list stated by
//    WHERE (`col IN (...)` / `col = lit`, a top-level conjunct on the single GROUP BY column):
//    QuerySpec::keys, as --keys; GROUP BY WIDTH_BUCKET(col, low, high, n) with COUNT: the flag
//    histogram over those bins.
//  - COUNT(*) / COUNT(col) [contribution_bounds_per_group => (L, U)]: a unit's row count in a
//    group clamped to [L, U] (whole numbers; default (0, 1)). L = 0 is the flag count with K = U;
//    L > 0 is the per-unit count (QuerySpec::pre_aggregate, the flag count with --per-unit).
//    COUNT(col) counts rows where col IS NOT NULL.
//  - SUM / AVG (col [, contribution_bounds_per_group => (L, U)]): per-unit pre-aggregation
//    (QuerySpec::pre_aggregate): each unit's sum / mean in the group, clamped to [L, U].
//  - VAR_POP, STDDEV_POP, PERCENTILE_CONT(col, q), APPROX_QUANTILES(col, n) with
//    contribution_bounds_per_row => (L, U): rows clamped, K = 5 (max_rows_per_group) rows per
//    unit and group.
//  - Omitted bounds: the column's declared bounds; none declared: refused.
//  - Any aggregate's argument may be a per-row expression (expression_lowering.h), read through
//    QuerySpec::value_expression. Given bounds apply as to a column; omitted, the bounds
//    query::expression::CheckExpression derives from declared ones (none derivable: refused
//    naming the column). AVG without bounds is per-unit (a mean of values in [L, U] lies in
//    [L, U]); SUM without bounds clamps rows and keeps K = max_rows_per_group rows per unit and
//    group, since derived row bounds do not bound a unit's total (contribution_bounds_per_group
//    gives the per-unit SUM). The value aggregates need a numeric expression.
//  - COUNT(expr) counts the rows where expr IS NOT NULL (COUNT(CASE WHEN c THEN 1 END)).
//  - COUNT(DISTINCT <privacy unit>) counts units: the count with bounds (0, 1), one row per unit
//    and group. Other DISTINCT aggregates are refused (a distinct count of other values needs a
//    sketch).
//  - GROUP BY without aggregates (`SELECT key FROM t GROUP BY key`) releases only the keys: one
//    part with QuerySpec::keys_only whose whole (epsilon, delta) goes to partition selection;
//    declared keys are public but still charged. Without GROUP BY it is refused.
//  - WHERE outside the filter language (columns against columns, arithmetic, CASE, functions) is
//    lowered whole to QuerySpec::row_condition (BOOL, checked here for its position); key lists
//    stated by top-level conjuncts still apply.
//  - GROUP BY a per-row expression, or a select-list alias of one (a column of that name wins):
//    QuerySpec::group_expressions, labelled by the alias (else the canonical text). A single key
//    whose only results are literals (a CASE, IF or COALESCE of literals) is a public key set
//    (QuerySpec::keys): all released, no partition selection, no delta.
//  - GROUP BY keys selected from the data include a NULL group (planner.h, null_group_columns);
//    declared keys do not.
//  - GROUP BY WIDTH_BUCKET(col, low, high, n) or WIDTH_BUCKET(col, (e0, ..., ek)) (width_bucket.h):
//    COUNT only, compiled onto the flag histogram over those bins (kHistogram, bins; K = COUNT's
//    upper bound); the buckets are public, released without partition selection.
//  - Dates (analyzer_calendar.cc): a WHERE comparison, BETWEEN, IN or IS NULL of a date or
//    timestamp column with DATE / TIMESTAMP literals is the --where filter (clamped reads);
//    GROUP BY DATE_TRUNC(col, DAY|WEEK|MONTH) is the group_by entry "col:bucket", every bucket of
//    the declared bounds a released text key. Any other reading of a date is refused.
//  - Arithmetic over aggregates and group keys in the select list is post-processing.
//  - FROM a JOIN b (USING / ON one equality): the engine first resolves the join
//    (join_resolution.h) onto one joined schema (query/join_source.h: private tables of one
//    population joined on their privacy units, public tables on any key) and rewrites the statement
//    onto it (`p.age` becomes the column `p__age`); this analyzer then compiles it as a statement
//    on one dataset. Its refusals are mapped back to the written names (AnalyzeJoin).
// Refusals are INVALID_ARGUMENT or UNIMPLEMENTED, "sql: line L, column C: ..." at the offending
// clause, before anything is planned or charged.
#ifndef DPQ_SERVER_SQL_ANALYZER_H_
#define DPQ_SERVER_SQL_ANALYZER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/query/query_spec.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// ZetaSQL's per-unit limit of kept values per group for the row-clamped aggregates (the default
// of OPTIONS max_rows_per_group), and the largest K that option takes (the flag
// --max-contributions' limit, planner.cc).
inline constexpr int kRowClampedMaxContributions = 5;
inline constexpr int kMaxRowsPerGroup = 1000000;
inline constexpr int kMaxAggregatesPerStatement = 20;

// A select-list value computed from the released parts (post-processing only).
struct OutputExpr {
  enum class Kind { kPart, kKey, kNumber, kString, kNull, kNegate, kBinary };
  Kind kind = Kind::kNumber;
  int index = 0;      // kPart: index into CompiledStatement::parts; kKey: into group_by
  int level = 0;      // kPart of PERCENTILE_CONT: which of the part's quantile levels
  double number = 0;  // kNumber
  std::string text;   // kString
  char op = '+';      // kBinary: + - * /
  std::vector<OutputExpr> children;
};

// Output types: "int64" (COUNT and integer keys, rounded), "float64", "string",
// "array<float64>" (APPROX_QUANTILES).
struct OutputColumn {
  std::string name;
  std::string type;
  OutputExpr expr;
};

// How one aggregate call reads its part's released rows.
struct PartInfo {
  std::string function;  // "COUNT", "SUM", "AVG", ...
  bool array = false;    // APPROX_QUANTILES: every level's value, in order
  Position pos;
};

struct OrderKey {
  int column = 0;  // index into columns
  bool descending = false;
};

struct CompiledStatement {
  std::string dataset;
  double epsilon = 0;  // the statement's charge (the parts' charges add up to it)
  double delta = 0;
  std::vector<std::string> group_by;  // key columns, in GROUP BY order
  // Their declared types; with a WIDTH_BUCKET group, then kInteger for the bucket number, which is
  // the last value of every key (after the group_by columns' values).
  std::vector<query::ColumnType> group_types;
  // GROUP BY WIDTH_BUCKET(...) (width_bucket.h): every part is a histogram over its buckets.
  bool width_bucket = false;
  // OPTIONS max_rows_contributed with GROUP BY one text column: every part is the flag text
  // histogram over that column (its release labels are the group's key).
  bool category_histogram = false;
  std::vector<query::QuerySpec> parts;
  std::vector<PartInfo> part_info;
  std::vector<OutputColumn> columns;
  std::vector<OrderKey> order_by;
  absl::optional<int64_t> limit;
};

// The dataset a script reads: every statement's FROM must name the same one (INVALID_ARGUMENT at
// the second FROM otherwise; a batch is charged to one ledger).
absl::StatusOr<std::string> DatasetOf(const Script& script);

// The DP aggregate functions the analyzer compiles, by SQL name, and the flag aggregate each
// lowers to. The scan-totality test (tests/db/scan_totality_test.cc) writes statements for each.
const std::map<std::string, query::AggregateKind>& SqlAggregateFunctions();

// Compiles `statement` against `schema` (the dataset FROM names). Every part's spec is complete
// (dataset, epsilon, delta, bounds when given, K, M, where) and still planned by the engine.
absl::StatusOr<CompiledStatement> Analyze(const Statement& statement,
                                          const query::DatasetSchema& schema);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_ANALYZER_H_
