#include "server/sql/analyzer_clauses.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/diagnostics.h"
#include "server/sql/expression_lowering.h"
#include "server/sql/number_literal.h"
#include "server/sql/width_bucket.h"

namespace dpq::sql::internal {

namespace {

// The first aggregate call inside `e` (a per-row expression cannot hold one), or null.
const Expr* NestedAggregate(const Expr& e) {
  if (e.kind == Expr::Kind::kCall &&
      (SqlAggregateFunctions().count(e.name) > 0 || e.name == "MIN" || e.name == "MAX")) {
    return &e;
  }
  for (const Expr& child : e.children) {
    if (const Expr* found = NestedAggregate(child)) return found;
  }
  return nullptr;
}

bool IsNumeric(query::expression::ValueType t) {
  return t == query::expression::ValueType::kInt64 || t == query::expression::ValueType::kFloat64;
}

}  // namespace

absl::StatusOr<Analyzer::Bounds> Analyzer::BoundsOf(const Expr& named) {
  const Expr& v = named.children[0];
  if (v.kind != Expr::Kind::kTuple || v.children.size() != 2) {
    return Invalid(v.pos, absl::StrCat(named.name, " takes two numbers: (lower, upper)"));
  }
  absl::optional<double> lo = NumberOf(v.children[0]);
  absl::optional<double> hi = NumberOf(v.children[1]);
  if (!lo || !hi) return Invalid(v.pos, absl::StrCat(named.name, " takes two number literals"));
  if (!(*lo < *hi)) {
    return Invalid(v.pos, absl::StrCat(named.name, ": lower must be < upper"));
  }
  return Bounds{*lo, *hi, v.pos};
}

absl::Status Analyzer::CountBounds(const Bounds& b, QuerySpec& spec) {
  if (b.lower != std::floor(b.lower) || b.lower < 0) {
    return Invalid(b.pos, "COUNT's lower bound is a whole number of rows >= 0");
  }
  if (b.upper != std::floor(b.upper) || b.upper > 1000000) {
    return Invalid(b.pos, "COUNT's upper bound is a whole number of rows in [1, 1000000]");
  }
  if (b.lower == 0) {
    spec.max_contributions = static_cast<int>(b.upper);
    return absl::OkStatus();
  }
  spec.pre_aggregate = true;
  spec.lower = b.lower;
  spec.upper = b.upper;
  return absl::OkStatus();
}

absl::Status Analyzer::CountAsHistogram(const absl::optional<Bounds>& bounds, QuerySpec& spec) {
  if (spec.pre_aggregate) {
    return Unsupported(bounds->pos,
                       "with a WIDTH_BUCKET group COUNT's contribution_bounds_per_group "
                       "must start at 0 (the histogram keeps at most U rows per unit)");
  }
  spec.aggregate = AggregateKind::kHistogram;
  spec.column = bucket_column_;
  spec.bins = bucket_edges_;
  return absl::OkStatus();
}

absl::Status Analyzer::CountWithRowBound(const absl::optional<Bounds>& bounds, QuerySpec& spec) {
  if (bounds) {
    return Invalid(bounds->pos,
                   "with max_rows_contributed COUNT takes no "
                   "contribution_bounds_per_group: K bounds a unit's rows across "
                   "all groups");
  }
  spec.max_contributions = max_rows_contributed_;
  spec.max_partitions = 1;
  if (!bucket_column_.empty()) {
    if (!out_.group_by.empty()) {
      return Unsupported(st_.group_by_pos,
                         "with max_rows_contributed a WIDTH_BUCKET group must "
                         "be the only GROUP BY item");
    }
    return CountAsHistogram(bounds, spec);
  }
  if (out_.group_by.empty()) return absl::OkStatus();  // K rows per unit, one count
  if (out_.group_by.size() != 1 || out_.group_types[0] != query::ColumnType::kText ||
      !keys_.empty()) {
    return Unsupported(st_.group_by_pos,
                       "max_rows_contributed is supported with GROUP BY one text column (no key "
                       "list in WHERE), a WIDTH_BUCKET alone, or no GROUP BY; give "
                       "max_groups_contributed otherwise");
  }
  // The flag text histogram: its column's categories (declared, or selected like keys) are the
  // groups; NULL values are dropped, as the flag histogram drops them.
  spec.aggregate = AggregateKind::kHistogram;
  spec.column = out_.group_by[0];
  spec.group_by.clear();
  out_.category_histogram = true;
  return absl::OkStatus();
}

absl::StatusOr<AggregateKind> Analyzer::AggregateKindOf(const Expr& call) {
  const std::map<std::string, AggregateKind>& kinds = SqlAggregateFunctions();
  const std::string& f = call.name;
  auto kind = kinds.find(f);
  if (kind == kinds.end()) {
    if (f == "MIN" || f == "MAX") {
      return Unsupported(call.pos, absl::StrCat(f,
                                                " is not supported: a DP minimum or maximum is "
                                                "dominated by one unit; use PERCENTILE_CONT(col, ",
                                                f == "MIN" ? "0" : "1", ")"));
    }
    return Unsupported(call.pos, absl::StrCat("function ", f,
                                              " is not supported: the aggregates "
                                              "are COUNT, SUM, AVG, VAR_POP, STDDEV_POP, "
                                              "PERCENTILE_CONT and APPROX_QUANTILES"));
  }
  if (max_rows_contributed_ > 0 && f != "COUNT") {
    return Unsupported(call.pos, absl::StrCat(f,
                                              " is not supported with max_rows_contributed: "
                                              "dpq answers COUNT under it (a histogram); give "
                                              "max_groups_contributed for ",
                                              f));
  }
  if (!bucket_column_.empty() && f != "COUNT") {
    return Unsupported(call.pos, absl::StrCat(f,
                                              " is not supported with a WIDTH_BUCKET group: "
                                              "it releases a histogram of counts (COUNT only)"));
  }
  if (out_.parts.size() == kMaxAggregatesPerStatement) {
    return Invalid(call.pos, absl::StrCat("at most ", kMaxAggregatesPerStatement,
                                          " aggregates per statement"));
  }
  return kind->second;
}

absl::StatusOr<Analyzer::AggregateArgs> Analyzer::ArgumentsOf(const Expr& call) {
  const std::string& f = call.name;
  AggregateArgs args;
  args.per_group = f == "COUNT" || f == "SUM" || f == "AVG";
  // dpq extension: SUM / AVG also take contribution_bounds_per_row (row-level, K rows).
  const bool either_bounds = f == "SUM" || f == "AVG";
  const std::string usual_name =
      args.per_group ? "contribution_bounds_per_group" : "contribution_bounds_per_row";
  args.bounds_name = usual_name;
  for (const Expr& arg : call.children) {
    if (arg.kind != Expr::Kind::kNamedArg) {
      if (args.bounds) return Invalid(arg.pos, "positional arguments come before named ones");
      args.positional.push_back(&arg);
      continue;
    }
    const bool row_level = either_bounds && arg.name == "contribution_bounds_per_row";
    if (arg.name != usual_name && !row_level) {
      return Invalid(arg.pos, absl::StrCat("named argument ", arg.name, " is not supported by ", f,
                                           ": it takes ", usual_name, " => (lower, upper)",
                                           either_bounds ? " or contribution_bounds_per_row => "
                                                           "(lower, upper)"
                                                         : ""));
    }
    if (args.bounds && arg.name != args.bounds_name) {  // both kinds of bounds
      return Invalid(arg.pos, absl::StrCat(f, " takes contribution_bounds_per_group (a unit's ",
                                           f == "SUM" ? "sum" : "mean",
                                           " clamped) or "
                                           "contribution_bounds_per_row (rows clamped), not both"));
    }
    if (args.bounds) return Invalid(arg.pos, absl::StrCat(args.bounds_name, " is given twice"));
    if (row_level) {
      args.per_group = false;
      args.bounds_name = arg.name;
    }
    ASSIGN_OR_RETURN(Bounds b, BoundsOf(arg));
    args.bounds = b;
  }
  const size_t want = (f == "PERCENTILE_CONT" || f == "APPROX_QUANTILES") ? 2 : 1;
  if (args.positional.size() != want) {
    return Invalid(call.pos,
                   absl::StrCat(f, " takes ", want == 2 ? "a column and a number" : "one column",
                                ", got ", args.positional.size(), " arguments"));
  }
  return args;
}

absl::StatusOr<const query::ColumnSchema*> Analyzer::AggregatedColumn(const Expr& call,
                                                                      const Expr& arg) {
  const std::string& f = call.name;
  if (arg.kind == Expr::Kind::kStar) {
    if (f != "COUNT") return Invalid(arg.pos, absl::StrCat(f, "(*) is not defined: name a column"));
    return nullptr;
  }
  if (arg.kind == Expr::Kind::kColumn) {
    ASSIGN_OR_RETURN(const ColumnSchema* column, Column(arg));
    if (f != "COUNT" && !column->is_numeric()) {
      return Invalid(arg.pos,
                     absl::StrCat(f, " needs a numeric column; ", column->name, " is text"));
    }
    return column;
  }
  // Aggregate() sends a per-row expression to ExpressionPart, never here.
  return absl::InternalError(absl::StrCat("sql: ", f, ": an expression reached AggregatedColumn"));
}

absl::Status Analyzer::CountPart(const AggregateArgs& args, const ColumnSchema* column,
                                 QuerySpec& spec) {
  spec.max_contributions = 1;
  if (max_rows_contributed_ > 0) {
    RETURN_IF_ERROR(CountWithRowBound(args.bounds, spec));
  } else {
    if (args.bounds) RETURN_IF_ERROR(CountBounds(*args.bounds, spec));
    if (!bucket_column_.empty()) RETURN_IF_ERROR(CountAsHistogram(args.bounds, spec));
  }
  if (column != nullptr) {
    const std::string not_null = absl::StrCat(column->name, " IS NOT NULL");
    spec.where = spec.where.empty() ? not_null : absl::StrCat("(", spec.where, ") AND ", not_null);
  }
  return absl::OkStatus();
}

absl::Status Analyzer::ValuePart(const Expr& call, const AggregateArgs& args,
                                 const ColumnSchema& column, QuerySpec& spec) {
  spec.column = column.name;
  if (args.bounds) return ClampedValue(call, args, *args.bounds, args.per_group, spec);
  if (!column.lower.has_value()) {
    return Invalid(call.pos, absl::StrCat(call.name, ": column ", column.name,
                                          " has no declared bounds: "
                                          "give ",
                                          args.bounds_name, " => (lower, upper)"));
  }
  // The declared bounds, written out: the planner resolves them alike (same plan, same
  // fingerprint), and ExplainSql can show them.
  return ClampedValue(call, args, Bounds{*column.lower, *column.upper, call.pos}, args.per_group,
                      spec);
}

absl::Status Analyzer::ClampedValue(const Expr& call, const AggregateArgs& args,
                                    const Bounds& range, bool per_unit, QuerySpec& spec) {
  const std::string& f = call.name;
  spec.lower = range.lower;
  spec.upper = range.upper;
  spec.pre_aggregate = per_unit;
  spec.max_contributions = per_unit ? 1 : max_rows_;
  if (spec.aggregate != AggregateKind::kQuantile) return absl::OkStatus();
  const Expr& level = *args.positional[1];
  absl::optional<double> n = NumberOf(level);
  if (!n) return Invalid(level.pos, absl::StrCat(f, ": the second argument is a number"));
  if (f == "PERCENTILE_CONT") {
    if (!(*n >= 0 && *n <= 1))
      return Invalid(level.pos, "PERCENTILE_CONT's percentile lies in [0, 1]");
    spec.quantiles = {*n};
    return absl::OkStatus();
  }
  if (*n != std::floor(*n) || *n < 1 || *n > 99) {
    return Invalid(level.pos, "APPROX_QUANTILES takes a whole number of quantiles in [1, 99]");
  }
  const int count = static_cast<int>(*n);
  for (int i = 0; i <= count; ++i) spec.quantiles.push_back(static_cast<double>(i) / count);
  return absl::OkStatus();
}

absl::StatusOr<OutputExpr> Analyzer::Aggregate(const Expr& call) {
  const std::string& f = call.name;
  ASSIGN_OR_RETURN(AggregateKind kind, AggregateKindOf(call));
  ASSIGN_OR_RETURN(AggregateArgs args, ArgumentsOf(call));
  QuerySpec spec;
  spec.dataset = schema_.name;
  spec.aggregate = kind;
  spec.max_partitions = max_groups_;
  spec.group_by = out_.group_by;
  spec.where = where_;
  const Expr& arg = *args.positional[0];
  if (call.distinct) {
    RETURN_IF_ERROR(DistinctUnitCount(call, args, spec));
  } else if (arg.kind != Expr::Kind::kStar && arg.kind != Expr::Kind::kColumn) {
    RETURN_IF_ERROR(ExpressionPart(call, args, spec));
  } else {
    ASSIGN_OR_RETURN(const ColumnSchema* column, AggregatedColumn(call, arg));
    if (f == "COUNT") {
      RETURN_IF_ERROR(CountPart(args, column, spec));
    } else {
      RETURN_IF_ERROR(ValuePart(call, args, *column, spec));
    }
  }
  spec.keys = keys_;
  if (mechanism_ == query::MechanismKind::kGaussian) {
    if (spec.aggregate == AggregateKind::kQuantile) {
      return Invalid(call.pos, absl::StrCat(f,
                                            " uses the exponential mechanism (pure epsilon-DP): "
                                            "mechanism 'gaussian' does not apply; ask it in a "
                                            "statement without that option"));
    }
    spec.mechanism = mechanism_;
  }
  if (!out_.group_by.empty() && needs_selection_ && !(out_.delta > 0)) {
    return Invalid(st_.group_by_pos,
                   absl::StrCat("GROUP BY ", absl::StrJoin(out_.group_by, ", "),
                                ": a column without declared categories, so the groups are chosen "
                                "by DP partition selection, which needs delta > 0 in OPTIONS"));
  }
  if (f == "PERCENTILE_CONT") {
    absl::optional<OutputExpr> shared = LevelOfEarlierPercentile(spec);
    if (shared) return *shared;
  }
  out_.parts.push_back(std::move(spec));
  out_.part_info.push_back({f, f == "APPROX_QUANTILES", call.pos});
  OutputExpr o;
  o.kind = OutputExpr::Kind::kPart;
  o.index = static_cast<int>(out_.parts.size() - 1);
  return o;
}

absl::optional<OutputExpr> Analyzer::LevelOfEarlierPercentile(const QuerySpec& spec) {
  for (size_t j = 0; j < out_.parts.size(); ++j) {
    QuerySpec& p = out_.parts[j];
    if (out_.part_info[j].function != "PERCENTILE_CONT" || p.column != spec.column ||
        CanonicalValue(p) != CanonicalValue(spec) || p.lower != spec.lower ||
        p.upper != spec.upper || p.max_contributions != spec.max_contributions ||
        p.where != spec.where) {
      continue;
    }
    const double q = spec.quantiles[0];
    auto at = std::find(p.quantiles.begin(), p.quantiles.end(), q);
    if (at == p.quantiles.end()) {
      p.quantiles.push_back(q);
      at = p.quantiles.end() - 1;
    }
    OutputExpr o;
    o.kind = OutputExpr::Kind::kPart;
    o.index = static_cast<int>(j);
    o.level = static_cast<int>(at - p.quantiles.begin());
    return o;
  }
  return absl::nullopt;
}

absl::StatusOr<query::expression::CheckedExpression> Analyzer::CheckedArgument(
    const Expr& call, const Expr& arg, query::expression::Expr& lowered) {
  if (const Expr* inner = NestedAggregate(arg)) {
    return Invalid(inner->pos, "aggregates cannot be nested");
  }
  ASSIGN_OR_RETURN(lowered, LowerExpression(arg));
  absl::StatusOr<query::expression::CheckedExpression> checked =
      query::expression::CheckExpression(lowered, schema_);
  if (checked.ok()) return checked;
  // The checker's message starts with the SQL position of the offending node when it knows it;
  // the aggregate is named after it, so the analyst knows which call to fix.
  const std::string message(checked.status().message());
  const size_t after_position = message.find(": ");
  if (absl::StartsWith(message, "line ") && after_position != std::string::npos) {
    return absl::Status(checked.status().code(),
                        absl::StrCat("sql: ", message.substr(0, after_position), ": ", call.name,
                                     ": ", message.substr(after_position + 2)));
  }
  return absl::Status(checked.status().code(), absl::StrCat("sql: ", FormatPosition(arg.pos), ": ",
                                                            call.name, ": ", message));
}

absl::Status Analyzer::ExpressionPart(const Expr& call, const AggregateArgs& args,
                                      QuerySpec& spec) {
  const std::string& f = call.name;
  const Expr& arg = *args.positional[0];
  query::expression::Expr lowered;
  ASSIGN_OR_RETURN(query::expression::CheckedExpression checked,
                   CheckedArgument(call, arg, lowered));
  spec.value_expression = std::make_shared<const query::expression::Expr>(std::move(lowered));
  if (f == "COUNT") {  // the rows where the expression is not NULL; any type
    if (max_rows_contributed_ > 0 || !bucket_column_.empty()) {
      return Unsupported(arg.pos,
                         "COUNT of an expression is not supported with max_rows_contributed or "
                         "a WIDTH_BUCKET group (a histogram counts rows): use COUNT(*) and WHERE");
    }
    spec.max_contributions = 1;
    if (args.bounds) RETURN_IF_ERROR(CountBounds(*args.bounds, spec));
    return absl::OkStatus();
  }
  if (!IsNumeric(checked.root.type)) {
    return Invalid(arg.pos, absl::StrCat(f, " needs a numeric value; its argument is ",
                                         query::expression::ValueTypeName(checked.root.type)));
  }
  if (args.bounds) return ClampedValue(call, args, *args.bounds, args.per_group, spec);
  if (!checked.bounds) {
    return Invalid(call.pos, absl::StrCat(f, ": the bounds of ", QuoteForMessage(checked.canonical),
                                          " cannot be derived: column ", checked.unbounded_column,
                                          " has no declared bounds; declare them, or give ",
                                          args.bounds_name, " => (lower, upper)"));
  }
  // Derived row bounds: AVG's per-unit mean of such values lies within them, so it is
  // pre-aggregated as AVG of a column is; a unit's SUM does not, so SUM clamps rows to them and
  // keeps K = max_rows_per_group rows per unit and group (the row-clamped form).
  const bool per_unit = f == "AVG";
  RETURN_IF_ERROR(ClampedValue(
      call, args, Bounds{checked.bounds->lower, checked.bounds->upper, call.pos}, per_unit, spec));
  // Not written out: the planner derives the same bounds from the declared ones (widening a
  // constant's single point to include 0), and explain then says they were derived.
  spec.lower.reset();
  spec.upper.reset();
  return absl::OkStatus();
}

absl::Status Analyzer::DistinctUnitCount(const Expr& call, const AggregateArgs& args,
                                         QuerySpec& spec) {
  const std::string& unit = schema_.privacy_unit;
  if (call.name != "COUNT") {
    return Unsupported(call.pos, absl::StrCat(call.name,
                                              "(DISTINCT ...) is not supported: dpq "
                                              "bounds each unit's rows, not distinct values; it "
                                              "answers COUNT(DISTINCT ",
                                              unit, ") only"));
  }
  const Expr& arg = *args.positional[0];
  if (arg.kind == Expr::Kind::kColumn) {
    ASSIGN_OR_RETURN(const ColumnSchema* column, Column(arg));
    if (column->name != unit) {
      return Unsupported(arg.pos, absl::StrCat("COUNT(DISTINCT ", column->name,
                                               ") is not supported: a distinct count of a "
                                               "column other than the privacy unit needs a "
                                               "sketch dpq does not have; COUNT(DISTINCT ",
                                               unit, ") counts units"));
    }
  } else {
    return Unsupported(arg.pos, absl::StrCat("COUNT(DISTINCT ...) takes the privacy unit column (",
                                             unit, ") only"));
  }
  if (args.bounds) {
    return Invalid(
        args.bounds->pos,
        absl::StrCat("COUNT(DISTINCT ", unit,
                     ") counts each unit once (bounds (0, 1)): it takes no ", args.bounds_name));
  }
  if (max_rows_contributed_ > 0 || !bucket_column_.empty()) {
    return Unsupported(call.pos, absl::StrCat("COUNT(DISTINCT ", unit,
                                              ") is not supported with max_rows_contributed or "
                                              "a WIDTH_BUCKET group (a histogram counts rows)"));
  }
  // One row per unit and group: the count of the units with a row there, sensitivity 1 per group.
  spec.max_contributions = 1;
  return absl::OkStatus();
}

absl::Status Analyzer::KeysOnlyPart() {
  if (out_.group_by.empty() && bucket_column_.empty()) {
    return Invalid(st_.pos,
                   "a DP SELECT needs at least one aggregate (COUNT, SUM, AVG, VAR_POP, "
                   "STDDEV_POP, PERCENTILE_CONT, APPROX_QUANTILES), or GROUP BY to release only "
                   "the group keys");
  }
  if (!bucket_column_.empty()) {
    return Unsupported(st_.group_by_pos,
                       "a WIDTH_BUCKET group's buckets are public: select COUNT(*) with them");
  }
  if (max_rows_contributed_ > 0) {
    return Unsupported(max_rows_contributed_pos_,
                       "max_rows_contributed bounds the rows COUNT reads; a select of group keys "
                       "alone takes max_groups_contributed");
  }
  if (needs_selection_ && !(out_.delta > 0)) {
    return Invalid(st_.group_by_pos,
                   absl::StrCat("GROUP BY ", absl::StrJoin(out_.group_by, ", "),
                                ": selecting keys without aggregates releases the groups DP "
                                "partition selection keeps, which needs delta > 0 in OPTIONS"));
  }
  // One part: the planner spends the statement's whole (epsilon, delta) on partition selection
  // and releases only the kept keys (declared keys are public, and still charged the epsilon).
  QuerySpec spec;
  spec.dataset = schema_.name;
  spec.aggregate = AggregateKind::kCount;
  spec.keys_only = true;
  spec.max_contributions = 1;
  spec.max_partitions = max_groups_;
  spec.group_by = out_.group_by;
  spec.where = where_;
  spec.keys = keys_;
  out_.parts.push_back(std::move(spec));
  out_.part_info.push_back({"KEYS", false, st_.group_by_pos});
  return absl::OkStatus();
}

std::string Analyzer::CanonicalValue(const QuerySpec& spec) const {
  if (spec.value_expression == nullptr) return "";
  absl::StatusOr<query::expression::CheckedExpression> checked =
      query::expression::CheckExpression(*spec.value_expression, schema_);
  return checked.ok() ? checked->canonical : "";
}

absl::Status Analyzer::SplitBudget() {
  // Out of range (e.g. above the largest epsilon of one query): the message points at OPTIONS.
  absl::StatusOr<int64_t> eps = query::EpsilonToUnits(out_.epsilon, "epsilon", query::kMaxEpsilon);
  if (!eps.ok()) return Invalid(st_.options_pos, eps.status().message());
  const int64_t eps_units = *eps;
  const int64_t n = static_cast<int64_t>(out_.parts.size());
  if (eps_units < n)
    return Invalid(st_.options_pos, "epsilon is too small to split over the aggregates");
  out_.epsilon = query::EpsilonFromUnits(eps_units);
  for (int64_t i = 0; i < n; ++i) {
    out_.parts[i].epsilon = query::EpsilonFromUnits(eps_units / n + (i < eps_units % n ? 1 : 0));
  }
  // Gaussian parts need delta for their noise too (and, grouped by selected keys, half of it
  // for the selection: planner.cc), so every part gets a share, as `--mechanism gaussian` does.
  if ((needs_selection_ && !out_.group_by.empty()) ||
      mechanism_ == query::MechanismKind::kGaussian) {
    absl::StatusOr<int64_t> delta = query::DeltaToUnits(out_.delta, "delta");
    if (!delta.ok()) return Invalid(st_.options_pos, delta.status().message());
    const int64_t delta_units = *delta;
    if (delta_units < n)
      return Invalid(st_.options_pos, "delta is too small to split over the aggregates");
    out_.delta = query::DeltaFromUnits(delta_units);
    for (int64_t i = 0; i < n; ++i) {
      out_.parts[i].delta = query::DeltaFromUnits(delta_units / n + (i < delta_units % n ? 1 : 0));
    }
  } else {
    // Nothing needs delta: pure epsilon-DP (Laplace), nothing of delta is charged.
    out_.delta = 0;
  }
  return absl::OkStatus();
}

}  // namespace dpq::sql::internal
