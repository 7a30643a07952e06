// The DP SELECT analyzer (analyzer.h) as one class whose clauses live in their own files:
//   analyzer.cc            the statement as a whole (Run) and the public entry points
//   analyzer_options.cc    OPTIONS (epsilon, delta, M, K, mechanism, max_rows_contributed)
//   analyzer_grouping.cc   column names, GROUP BY, key lists stated by WHERE, WIDTH_BUCKET
//   analyzer_where.cc      WHERE rendered to the --where filter language
//   analyzer_select.cc     the select list (post-processing expressions, output types), ORDER BY
//   analyzer_aggregates.cc aggregate calls lowered to QuerySpec parts, bounds, the budget split
//   analyzer_calendar.cc   dates: DATE / TIMESTAMP literals in WHERE, DATE_TRUNC groups
//   analyzer_expressions.cc per-row expressions: WHERE outside the filter language, GROUP BY
//                          expressions and their keys in the select list
// Internal to server/sql: nothing outside includes it.
#ifndef DPQ_SERVER_SQL_ANALYZER_CLAUSES_H_
#define DPQ_SERVER_SQL_ANALYZER_CLAUSES_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/query/expression/expression.h"
#include "server/query/query_spec.h"
#include "server/sql/analyzer.h"
#include "server/sql/ast.h"

namespace dpq::sql::internal {

// The query-layer names every clause file uses.
using query::AggregateKind;
using query::ColumnSchema;
using query::DatasetSchema;
using query::QuerySpec;

// The literal's text as the filter language spells it (sign folded into the number).
absl::optional<std::string> FilterLiteral(const Expr& e);
// "int64", "float64" or "string": the output type of a group key of that column type.
std::string OutputTypeOf(query::ColumnType t);

class Analyzer {
 public:
  Analyzer(const Statement& st, const query::DatasetSchema& schema) : st_(st), schema_(schema) {}
  absl::StatusOr<CompiledStatement> Run();

 private:
  // ---- OPTIONS ----
  absl::Status Options();

  // dpq extension: mechanism = 'laplace' (default) | 'gaussian', a string or a bare word, as the
  // flag --mechanism.
  absl::Status MechanismOption(const DpOption& o);

  // dpq extension: K, the rows kept per unit and group by the row-clamped aggregates (VAR_POP,
  // STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILES, SUM/AVG with contribution_bounds_per_row);
  // the range of the flag --max-contributions. No effect on COUNT or per-unit SUM/AVG.
  absl::Status MaxRowsOption(const DpOption& o);

  // A row-count option's value: a whole number in [1, kMaxRowsPerGroup] (the flag
  // --max-contributions range), refused at the value's position otherwise.
  absl::StatusOr<int> RowCountOption(const DpOption& o);

  // ZetaSQL's max_rows_contributed = K: each unit contributes at most K rows to the whole
  // statement, across all groups. dpq answers it where that is exactly the flag histogram's
  // bounding (K rows per unit across all bins): COUNT with GROUP BY one text column (the text
  // histogram over its categories), with GROUP BY a WIDTH_BUCKET alone, or without GROUP BY.
  absl::Status MaxRowsContributedOption(const DpOption& o);

  // ---- names ----
  // The column `e` names. A date or timestamp column is refused unless `calendar_ok` (the places
  // that read it clamped: WHERE comparisons with literals, DATE_TRUNC groups).
  absl::StatusOr<const query::ColumnSchema*> Column(const Expr& e, bool calendar_ok = false);

  // ---- dates (analyzer_calendar.cc; calendar_literal.h) ----
  // `literal` compared in WHERE with column `c`: a DATE / TIMESTAMP literal only with a column of
  // its type, and a date or timestamp column only with such a literal or a quoted string (which
  // the filter language parses in the column's form).
  absl::Status CalendarOperand(const query::ColumnSchema& c, const Expr& literal) const;
  // DATE_TRUNC(column, part)'s group_by entry, "column:bucket" as --group-by writes it, after
  // checking that it truncates a date or timestamp column to a known part.
  absl::StatusOr<std::string> TruncGroup(const Expr& call);
  // GROUP BY DATE_TRUNC(...) (written at `at`): the planner's calendar-bucket group, every bucket
  // the column's declared bounds span a released key ('YYYY-MM-DD'), no partition selection.
  absl::Status GroupByTrunc(const Expr& call, Position at);
  // DATE_TRUNC(...) in the select list: its GROUP BY key.
  absl::StatusOr<OutputExpr> TruncKey(const Expr& call);
  // GROUP BY <alias> of a selected DATE_TRUNC(...) (when no column has that name): that call;
  // else `g` itself.
  const Expr& SelectedTrunc(const Expr& g) const;

  // ---- GROUP BY ----
  absl::Status GroupBy();

  // ---- Declared keys from WHERE (dpq extension; the flag --keys) ----
  // Grouped by one column, a top-level AND-conjunct `col IN (literals)` or `col = literal` on that
  // column states the public key domain: every listed key is released (an empty one too), no
  // partition selection, no delta for it. The list is the query text's, never the data's. Several
  // such conjuncts: their intersection (the only keys a row can have). Text columns take 'string'
  // literals, integer columns whole numbers (the scan compares keys as text, so they are written
  // as PostgreSQL prints an integer); a float column, or any other form, states no key list.
  absl::Status DeclaredKeys();

  // The keys `e` lists for the single GROUP BY column (duplicates dropped), or none.
  absl::optional<std::vector<std::string>> KeyList(const Expr& e) const;

  // GROUP BY <alias> of a select item `WIDTH_BUCKET(...) AS alias` (when no column has that name,
  // as PostgreSQL resolves it): that call; else `g` itself.
  const Expr& SelectedWidthBucket(const Expr& g) const;

  // The bucketed column and edges of a WIDTH_BUCKET call (width_bucket.h).
  absl::StatusOr<std::pair<std::string, std::vector<double>>> WidthBucketGrid(const Expr& call);

  absl::Status GroupByWidthBucket(const Expr& call, Position at);

  // WIDTH_BUCKET(...) in the select list: the bucket key, when it is the GROUP BY's one.
  absl::StatusOr<OutputExpr> WidthBucketKey(const Expr& call);

  // ---- WHERE: the filter language of --where, in SQL syntax ----
  absl::StatusOr<std::string> RenderWhere(const Expr& e);

  // ---- select list ----
  absl::StatusOr<OutputExpr> Output(const Expr& e);

  absl::Status Numeric(const OutputExpr& o, Position p);

  std::string TypeOf(const OutputExpr& o) const;

  struct Bounds {
    double lower = 0;
    double upper = 0;
    Position pos;
  };
  absl::StatusOr<Bounds> BoundsOf(const Expr& named);

  // COUNT's contribution_bounds_per_group => (L, U): a unit's row count in the group clamped to
  // [L, U] (ZetaSQL), whole numbers 0 <= L < U <= 1000000. With L = 0 that is exactly the count
  // of the rows kept with at most K = U rows per unit and group (the flag count with K = U, the
  // same plan and fingerprint); with L > 0 the count is pre-aggregated per unit
  // (QuerySpec::pre_aggregate), the flag count with --per-unit --lower L --upper U. Without
  // bounds U = 1: each unit counted once.
  absl::Status CountBounds(const Bounds& b, query::QuerySpec& spec);

  // COUNT with a WIDTH_BUCKET group is the flag histogram over the buckets: each unit keeps at
  // most K = U rows of a group (all buckets together), the released vector moves by at most K.
  absl::Status CountAsHistogram(const absl::optional<Bounds>& bounds, query::QuerySpec& spec);

  // COUNT under max_rows_contributed (MaxRowsContributedOption): K rows per unit in all, so the released counts move
  // by at most K in L1 together, the bound of the flag histogram (planner.cc, kHistogram).
  absl::Status CountWithRowBound(const absl::optional<Bounds>& bounds, query::QuerySpec& spec);

  // An aggregate call's parsed arguments: the positional ones (the column, then the level of a
  // quantile), the bounds and their name, and whether they bound a unit's per-group value.
  struct AggregateArgs {
    std::vector<const Expr*> positional;
    absl::optional<Bounds> bounds;
    bool per_group = false;
    std::string bounds_name;
  };
  // The flag aggregate of a known function allowed in this statement, or the refusal.
  absl::StatusOr<query::AggregateKind> AggregateKindOf(const Expr& call);
  absl::StatusOr<AggregateArgs> ArgumentsOf(const Expr& call);
  // The aggregated column (null for COUNT(*)); an expression goes to ExpressionPart instead.
  absl::StatusOr<const query::ColumnSchema*> AggregatedColumn(const Expr& call, const Expr& arg);
  // COUNT's part: K, the per-unit or histogram forms, COUNT(col)'s IS NOT NULL.
  absl::Status CountPart(const AggregateArgs& args, const query::ColumnSchema* column,
                         query::QuerySpec& spec);
  // A value aggregate's part: bounds (given or declared), per-unit or row-clamped, quantile levels.
  absl::Status ValuePart(const Expr& call, const AggregateArgs& args,
                         const query::ColumnSchema& column, query::QuerySpec& spec);
  absl::StatusOr<OutputExpr> Aggregate(const Expr& call);

  // PERCENTILE_CONT calls on the same column with the same bounds are one quantile part with
  // several levels, as the flag query `--aggregate quantile --quantiles q1,q2,...` asks them:
  // one release, one share of epsilon, the planner's joint selection (planner.cc, kQuantile)
  // rather than one part per level. Returns the call's value in that earlier part, or none
  // (`spec`, a single level, is then a part of its own).
  absl::optional<OutputExpr> LevelOfEarlierPercentile(const query::QuerySpec& spec);

  // Shares in the ledger's units, so the parts' charges add up to the statement's: exactly up to
  // epsilon 1125 (2^50 units); above, each share travels as a double in QuerySpec::epsilon and may
  // come back a few dozen units (1e-12 each) off, so the sum is within 4.5e-10 at epsilon 1e6
  // (the bound is derived in tests/fuzz/sql_fuzz.cc, which checks it).
  absl::Status SplitBudget();

  absl::Status OrderBy();

  // ---- aggregates over per-row expressions, COUNT(DISTINCT unit), key-only selects ----
  // A value part's clamp range, per-unit or row-clamped (K = max_rows_per_group), and the levels
  // of a quantile.
  absl::Status ClampedValue(const Expr& call, const AggregateArgs& args, const Bounds& range,
                            bool per_unit, query::QuerySpec& spec);
  // An aggregate argument that is an expression: lowered into `lowered`, then typed and bounded
  // by CheckExpression (errors at their SQL position).
  absl::StatusOr<query::expression::CheckedExpression> CheckedArgument(
      const Expr& call, const Expr& arg, query::expression::Expr& lowered);
  // QuerySpec::value_expression: COUNT counts where it is not NULL; the value aggregates clamp
  // it to the given bounds, else to its derived ones (analyzer.h).
  absl::Status ExpressionPart(const Expr& call, const AggregateArgs& args, query::QuerySpec& spec);
  // COUNT(DISTINCT <privacy unit>): the count with one row per unit and group.
  absl::Status DistinctUnitCount(const Expr& call, const AggregateArgs& args,
                                 query::QuerySpec& spec);
  // A select without aggregates: GROUP BY keys only (QuerySpec::keys_only), or the refusal.
  absl::Status KeysOnlyPart();
  // The canonical text of a part's value expression ("" for a column).
  std::string CanonicalValue(const query::QuerySpec& spec) const;

  const Statement& st_;
  const query::DatasetSchema& schema_;
  CompiledStatement out_;
  int max_groups_ = 1;
  int max_rows_ = kRowClampedMaxContributions;
  int max_rows_contributed_ = 0;  // OPTIONS max_rows_contributed; 0: not given
  Position max_rows_contributed_pos_;
  query::MechanismKind mechanism_ = query::MechanismKind::kLaplace;
  Position mechanism_pos_;
  std::vector<std::string> keys_;  // DeclaredKeys(): the key list the WHERE clause states
  bool needs_selection_ = false;
  std::vector<query::ColumnType> key_types_;
  std::string where_;
  // GROUP BY WIDTH_BUCKET(...): the bucketed column (empty: none) and its bucket edges.
  std::string bucket_column_;
  std::vector<double> bucket_edges_;

  // ---- per-row expressions (analyzer_expressions.cc; expression_lowering.h) ----
  using ExprPtr = std::shared_ptr<const query::expression::Expr>;

  // `e` lowered and checked against the schema (query::expression::CheckExpression), its columns
  // resolved as Column() does; refusals carry the SQL position of the offending node.
  absl::StatusOr<query::expression::CheckedExpression> Checked(const Expr& e);
  absl::Status ResolveColumns(const Expr& e);

  // WHERE: rendered to the filter language (where_) when it fits, as the flag --where; else the
  // whole clause lowered, checked BOOL, as the row condition of every part.
  absl::Status Where();

  // The select item GROUP BY <alias> names (no column has that name, as PostgreSQL resolves
  // it), else null.
  const SelectItem* SelectedByAlias(const Expr& g) const;

  // GROUP BY a per-row expression `by` (written at `at`, maybe through `alias`): a key labelled
  // by the alias, else by its canonical text; a CASE of literals alone is a public key set.
  absl::Status GroupByExpression(const Expr& by, const std::string& alias, Position at);

  // A select item that is a GROUP BY expression (same canonical text) or names its alias: that
  // key's output; none otherwise.
  absl::optional<OutputExpr> GroupExpressionKey(const SelectItem& item);

  // The row condition and group expressions onto every part (after the select list built them).
  void AttachExpressions();

  ExprPtr row_condition_;                     // null: none (or WHERE in the filter language)
  std::vector<ExprPtr> group_expressions_;    // one per out_.group_by entry; null: a column
  std::vector<std::string> group_canonical_;  // their canonical texts ("" for a column)
  // GROUP BY WIDTH_BUCKET(<expression>, ...): the bucketed expression (bucket_column_ holds its
  // canonical text); the histogram parts read it instead of a column. Null: a column, or none.
  ExprPtr bucket_expression_;
};

}  // namespace dpq::sql::internal

#endif  // DPQ_SERVER_SQL_ANALYZER_CLAUSES_H_
