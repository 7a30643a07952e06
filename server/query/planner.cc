#include "server/query/planner.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/budget_share.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/aggregate_plans.h"
#include "server/query/calendar.h"
#include "server/query/expression_planning.h"
#include "server/query/privacy_units.h"
#include "server/query/sensitivity.h"

namespace dpq::query {
namespace {

constexpr int kMaxContributionsLimit = 1000000;

absl::Status ValidatePrivacyParameters(const QuerySpec& spec, bool select_keys) {
  RETURN_IF_ERROR(ValidateIsPositive(spec.epsilon, "epsilon"));
  if (select_keys) {
    if (!(spec.delta > 0 && spec.delta < 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "delta must lie in (0, 1): the group keys are not declared, so they are chosen by DP "
          "partition selection, which needs delta > 0 (or declare keys / categories); got ",
          spec.delta));
    }
  } else if (spec.mechanism == MechanismKind::kLaplace) {
    if (spec.delta != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "delta must be 0 for the laplace mechanism (pure epsilon-DP), got ", spec.delta));
    }
  } else {
    RETURN_IF_ERROR(ValidateInOpenRange(spec.delta, 0, 1, "delta"));
  }
  RETURN_IF_ERROR(ValidateInOpenRange(spec.confidence, 0, 1, "confidence"));
  if (spec.max_contributions < 1 || spec.max_contributions > kMaxContributionsLimit) {
    return absl::InvalidArgumentError(absl::StrCat("max_contributions must lie in [1, ",
                                                   kMaxContributionsLimit, "], got ",
                                                   spec.max_contributions));
  }
  return absl::OkStatus();
}

// A pre-aggregated count (QuerySpec::pre_aggregate with kCount) clamps each unit's row count in
// a group to [lower, upper]: both required, 0 <= lower < upper (counts are never negative), magnitude
// <= kMaxBoundMagnitude. Clamping to [0, U] with a whole U keeps min(count, U) of a unit's rows,
// which is exactly the count of the rows kept with K = U rows per unit and group: that case is
// planned as the row-level count with K = U (the same plan, charge and fingerprint as the flag
// count with --max-contributions U), so only lower > 0 or a fractional U pre-aggregates.
absl::Status ResolvePerUnitCount(QuerySpec& spec) {
  if (!spec.lower.has_value() || !spec.upper.has_value()) {
    return absl::InvalidArgumentError(
        "lower and upper are required for a per-unit count: each unit's row count in a group is "
        "clamped to [lower, upper]");
  }
  RETURN_IF_ERROR(ValidateBound(*spec.lower, "lower"));
  RETURN_IF_ERROR(ValidateBound(*spec.upper, "upper"));
  *spec.lower += 0.0;
  *spec.upper += 0.0;
  if (!(*spec.lower >= 0 && *spec.lower < *spec.upper)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a per-unit count needs 0 <= lower < upper (bounds of a row count), got lower=",
        *spec.lower, " upper=", *spec.upper));
  }
  if (*spec.lower == 0 && *spec.upper == std::floor(*spec.upper) &&
      *spec.upper <= kMaxContributionsLimit) {
    spec.max_contributions = static_cast<int>(*spec.upper);
    spec.pre_aggregate = false;
    spec.lower.reset();
    spec.upper.reset();
  }
  return absl::OkStatus();
}

// One canonical spelling of a double list for the fingerprint.
std::string Doubles(const std::vector<double>& v) {
  std::string out;
  for (double x : v) absl::StrAppend(&out, out.empty() ? "" : ",", absl::StrFormat("%.17g", x));
  return out;
}

// Length-prefixed strings, so no choice of keys makes two different lists print alike.
std::string Strings(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& x : v) absl::StrAppend(&out, x.size(), ":", x, ";");
  return out;
}

// `grouped`: the scan groups rows (group_by, or a text histogram, whose category is a group).
std::string Fingerprint(const QuerySpec& s, int64_t epsilon_units, int64_t delta_units,
                        bool grouped) {
  // %.17g round-trips doubles, so two specs share a fingerprint iff they are the same query.
  std::string f = absl::StrFormat(
      "v1|dataset=%s|aggregate=%s|column=%s|lower=%.17g|upper=%.17g|k=%d|mechanism=%s|epsilon=%de-12|"
      "delta=%de-18|confidence=%.17g",
      s.dataset, AggregateName(s.aggregate), s.column, s.lower.value_or(0), s.upper.value_or(0),
      s.max_contributions, MechanismName(s.mechanism), epsilon_units, delta_units, s.confidence);
  // Fields of the extended language, only when used: earlier fingerprints stay valid.
  // "|release=2": quantiles since they carry value intervals (a noisy histogram behind them buys
  // part or all of epsilon), so a cached answer of the older release (no intervals) is never served.
  if (!s.quantiles.empty()) absl::StrAppend(&f, "|quantiles=", Doubles(s.quantiles), "|release=2");
  if (!s.bins.empty()) absl::StrAppend(&f, "|bins=", Doubles(s.bins));
  if (s.pre_aggregate) absl::StrAppend(&f, "|pre_aggregate=1");
  if (!s.group_by.empty()) {
    absl::StrAppend(&f, "|group_by=", Strings(s.group_by), "|keys=", Strings(s.keys),
                    "|m=", s.max_partitions);
  } else if (grouped) {
    // A text histogram: M bounds the categories a unit keeps, so it changes the question (the
    // bounding and the noise) like a group-by's M does.
    absl::StrAppend(&f, "|m=", s.max_partitions);
  }
  return f;
}

absl::Status UnknownColumn(const DatasetSchema& schema, const std::string& name,
                           absl::string_view field) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": column ", QuoteForMessage(name),
                                                 " does not exist in dataset ", schema.name));
}

// The cross product of the declared domains, bounded so the answer stays a reasonable size.
absl::StatusOr<std::vector<std::vector<std::string>>> DeclaredKeyProduct(
    const std::vector<std::vector<std::string>>& domains) {
  size_t total = 1;
  for (const auto& domain : domains) {
    total *= domain.size();
    if (total > kMaxKeys) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group_by: the declared key domains have more than ", kMaxKeys, " combinations"));
    }
  }
  std::vector<std::vector<std::string>> keys = {{}};
  for (const auto& domain : domains) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : keys) {
      for (const std::string& v : domain) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    }
    keys = std::move(next);
  }
  return keys;
}

// A declared key list (--keys): at most kMaxKeys distinct texts.
absl::Status CheckKeyList(const std::vector<std::string>& keys) {
  if (keys.size() > kMaxKeys) {
    return absl::InvalidArgumentError(absl::StrCat("keys: at most ", kMaxKeys, " keys"));
  }
  std::set<std::string> unique;
  for (const std::string& k : keys) {
    // A key is a text value like a declared category, with the same limits: PostgreSQL text
    // cannot hold NUL (the bound parameter failed in the debit, INTERNAL).
    if (k.size() > kMaxCategoryLength || k.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("keys: each key must be at most ",
                                                     kMaxCategoryLength, " bytes without NUL, got ",
                                                     QuoteForMessage(k)));
    }
    if (!unique.insert(k).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("keys: ", QuoteForMessage(k), " appears twice"));
    }
  }
  return absl::OkStatus();
}

// A group-by entry "column:bucket" (dpqctl --group-by day:week): a date or timestamp column read
// by calendar bucket, whose domain is every bucket its declared bounds span: the groups depend on
// the schema and the query text only. `bucket` is empty for a calendar column named alone.
absl::StatusOr<CalendarGrouping> PlanCalendarGroup(const ColumnSchema& column,
                                                   absl::string_view bucket) {
  if (!column.is_calendar()) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_by: ", column.name, " is ", ColumnTypeName(column.type),
                     ": only a date or timestamp column is grouped by calendar bucket (COLUMN:day, "
                     "COLUMN:week or COLUMN:month)"));
  }
  const absl::optional<CalendarBucket> parsed = ParseCalendarBucket(bucket);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_by: ", column.name, " is a ", ColumnTypeName(column.type),
                     ": group it by calendar bucket, ", column.name, ":day, ", column.name,
                     ":week (ISO, from "
                     "Monday) or ",
                     column.name, ":month",
                     bucket.empty() ? "" : absl::StrCat("; got ", QuoteForMessage(bucket))));
  }
  if (!column.calendar_lower || !column.calendar_upper) {
    return absl::InvalidArgumentError(absl::StrCat("group_by: ", column.name, " has no bounds"));
  }
  const int64_t count =
      BucketCount(column.type, *parsed, *column.calendar_lower, *column.calendar_upper);
  if (count > static_cast<int64_t>(kMaxKeys)) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_by: ", column.name, ":", CalendarBucketName(*parsed), " spans ", count,
                     " buckets between its declared bounds, more than the ", kMaxKeys,
                     " groups a query may release; use a coarser bucket"));
  }
  CalendarGrouping g;
  g.type = column.type;
  g.bucket = *parsed;
  g.lower = CalendarSqlText(column.type, *column.calendar_lower);
  g.upper = CalendarSqlText(column.type, *column.calendar_upper);
  return g;
}

// Appends group column `index` (of `count`): `column` by calendar bucket, its domain every bucket.
absl::Status AddCalendarGroup(const ColumnSchema& column, absl::string_view bucket, size_t index,
                              size_t count, ScanPlan& scan) {
  ASSIGN_OR_RETURN(CalendarGrouping grouping, PlanCalendarGroup(column, bucket));
  scan.group_calendars.resize(count);
  scan.group_calendars[index] = grouping;
  scan.group_columns.push_back(column.name);
  scan.group_domains.push_back(
      BucketKeys(column.type, grouping.bucket, *column.calendar_lower, *column.calendar_upper));
  return absl::OkStatus();
}

// Group-by columns and their domains. Sets plan.scan.group_* and plan.declared_keys, and says
// whether the keys must be selected from the data.
absl::StatusOr<bool> PlanGroups(const DatasetSchema& schema, QuerySpec& spec, QueryPlan& plan) {
  if (spec.group_by.size() > kMaxGroupColumns) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_by: at most ", kMaxGroupColumns, " columns"));
  }
  if (spec.max_partitions < 1 || spec.max_partitions > kMaxPartitionsLimit) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_partitions must lie in [1, ", kMaxPartitionsLimit, "], got ", spec.max_partitions));
  }
  if (spec.group_by.empty()) {
    if (!spec.keys.empty()) return absl::InvalidArgumentError("keys need a group_by column");
    return false;
  }
  if (!spec.group_expressions.empty() && spec.group_expressions.size() != spec.group_by.size()) {
    return absl::InvalidArgumentError("group_by: one group expression per group_by entry");
  }
  std::set<std::string> seen;
  bool all_declared = true;
  for (size_t i = 0; i < spec.group_by.size(); ++i) {
    const std::string& name = spec.group_by[i];
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("group_by: column ", name, " appears twice"));
    }
    if (i < spec.group_expressions.size() && spec.group_expressions[i] != nullptr) {
      // A key computed per row: its public key set is the literal results it can take (a CASE
      // of literals), else its keys are selected from the data.
      ASSIGN_OR_RETURN(CheckedExpressionPtr key,
                       CheckGroupExpression(*spec.group_expressions[i], name, schema));
      plan.scan.group_expressions.resize(spec.group_by.size());
      plan.scan.group_expressions[i] = key;
      plan.scan.group_columns.push_back(name);
      plan.scan.group_domains.push_back(key->literal_results);
      if (key->literal_results.empty()) all_declared = false;
      continue;
    }
    const size_t colon = name.find(':');
    const std::string column_name = name.substr(0, colon);
    const ColumnSchema* column = schema.FindColumn(column_name);
    if (column == nullptr) return UnknownColumn(schema, column_name, "group_by");
    if (column_name == schema.privacy_unit) {
      return absl::InvalidArgumentError(
          "group_by: the privacy unit column cannot be a group (every group would be one unit)");
    }
    if (colon != std::string::npos || column->is_calendar()) {
      // "day:week" and "day:month" group one column twice ("day" alone was inserted above).
      if (colon != std::string::npos && !seen.insert(column_name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("group_by: column ", column_name, " appears twice"));
      }
      RETURN_IF_ERROR(AddCalendarGroup(
          *column, colon == std::string::npos ? "" : absl::string_view(name).substr(colon + 1), i,
          spec.group_by.size(), plan.scan));
      continue;
    }
    plan.scan.group_columns.push_back(name);
    plan.scan.group_domains.push_back(column->categories);
    if (column->categories.empty()) all_declared = false;
  }
  if (!spec.keys.empty() && !plan.scan.group_calendars.empty()) {
    return absl::InvalidArgumentError(
        "keys: a calendar bucket's keys are every bucket its column's declared bounds span; "
        "narrow them with --where instead");
  }
  if (!spec.keys.empty()) {
    if (spec.group_by.size() != 1) {
      return absl::InvalidArgumentError(
          "keys: a declared key list needs exactly one group_by column");
    }
    RETURN_IF_ERROR(CheckKeyList(spec.keys));
    plan.scan.group_domains[0] = spec.keys;
    all_declared = true;
  }
  if (!all_declared) {
    // Keys come from the data: no declared domain may restrict a column half-way.
    plan.scan.group_domains.assign(plan.scan.group_columns.size(), {});
    return true;
  }
  ASSIGN_OR_RETURN(plan.declared_keys, DeclaredKeyProduct(plan.scan.group_domains));
  return false;
}

// Options that belong to one aggregate only.
absl::Status CheckAggregateOptions(const QuerySpec& spec) {
  const AggregateKind agg = spec.aggregate;
  if (agg != AggregateKind::kQuantile && !spec.quantiles.empty()) {
    return absl::InvalidArgumentError("quantiles are only for aggregate quantile");
  }
  if (agg != AggregateKind::kHistogram && !spec.bins.empty()) {
    return absl::InvalidArgumentError("bins are only for aggregate histogram");
  }
  return absl::OkStatus();
}

// The aggregated column (none for a count) and whether it is a text column's histogram.
struct AggregateColumn {
  const ColumnSchema* column = nullptr;
  bool text_histogram = false;
  // A value expression (QuerySpec::value_expression) and the column it stands in for, which
  // `column` points to (none for a count, which reads the expression only for its NULL test).
  ValueExpression expression;
};

// A text-column histogram is a count grouped by that column: one bin per category.
absl::StatusOr<AggregateColumn> ResolveAggregateColumn(const DatasetSchema& schema,
                                                       const QuerySpec& spec) {
  const AggregateKind agg = spec.aggregate;
  AggregateColumn out;
  if (spec.value_expression != nullptr) {
    if (!spec.column.empty()) {
      return absl::InvalidArgumentError("column: give a column or a value expression, not both");
    }
    ASSIGN_OR_RETURN(out.expression, CheckValueExpression(spec, schema));
    out.column = out.expression.stand_in.get();
    return out;
  }
  if (agg == AggregateKind::kCount) return out;
  if (spec.column.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("column is required for aggregate ", AggregateName(agg)));
  }
  out.column = schema.FindColumn(spec.column);
  if (out.column == nullptr) return UnknownColumn(schema, spec.column, "column");
  if (out.column->is_calendar()) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", out.column->name, " is a ", ColumnTypeName(out.column->type), "; ",
                     AggregateName(agg), " needs a numeric column (count rows by --group-by ",
                     out.column->name, ":day, :week or :month)"));
  }
  out.text_histogram = agg == AggregateKind::kHistogram && !out.column->is_numeric();
  if (!out.column->is_numeric() && !out.text_histogram) {
    return absl::InvalidArgumentError(absl::StrCat("column ", out.column->name, " is text; ",
                                                   AggregateName(agg), " needs a numeric column"));
  }
  return out;
}

// The histogram's text column joins the scan's groups. `select_keys` becomes true when its
// categories must be selected from the data.
absl::Status PlanTextHistogram(const DatasetSchema& schema, const ColumnSchema& column,
                               const QuerySpec& spec, QueryPlan& plan, bool& select_keys) {
  if (!spec.bins.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bins: column ", column.name, " is text; its bins are its categories"));
  }
  if (std::find(spec.group_by.begin(), spec.group_by.end(), column.name) != spec.group_by.end()) {
    return absl::InvalidArgumentError("group_by: the histogram column cannot also be a group");
  }
  if (column.name == schema.privacy_unit) {
    return absl::InvalidArgumentError("column: the privacy unit column cannot be histogrammed");
  }
  // The category becomes the last group column; its domain is the declared categories, else the
  // categories are selected like keys.
  plan.scan.group_columns.push_back(column.name);
  plan.scan.group_domains.push_back(column.categories);
  if (!select_keys && column.categories.empty()) {
    select_keys = true;
    plan.declared_keys.clear();
    plan.scan.group_domains.assign(plan.scan.group_columns.size(), {});
  } else if (!select_keys) {
    std::vector<std::vector<std::string>> next;
    for (const auto& prefix : plan.declared_keys.empty() ? std::vector<std::vector<std::string>>{{}}
                                                         : plan.declared_keys) {
      for (const std::string& v : column.categories) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    }
    if (next.size() > kMaxKeys) {
      return absl::InvalidArgumentError(
          absl::StrCat("the histogram has more than ", kMaxKeys, " bins"));
    }
    plan.declared_keys = std::move(next);
  }
  // With a grouped scan the per-unit partition bound applies to (group, category) pairs.
  return absl::OkStatus();
}

// Per-unit pre-aggregation (QuerySpec::pre_aggregate): which aggregates allow it, and the count's
// resolution.
absl::Status CheckPreAggregation(QuerySpec& spec) {
  if (!spec.pre_aggregate) return absl::OkStatus();
  const AggregateKind agg = spec.aggregate;
  if (agg != AggregateKind::kSum && agg != AggregateKind::kMean && agg != AggregateKind::kCount) {
    return absl::InvalidArgumentError(
        "per_unit: per-unit pre-aggregation applies to count, sum and mean only");
  }
  if (spec.max_contributions != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_contributions must be 1 with per-unit pre-aggregation (each unit contributes one "
        "clamped value per group), got ",
        spec.max_contributions));
  }
  if (agg == AggregateKind::kCount) RETURN_IF_ERROR(ResolvePerUnitCount(spec));
  return absl::OkStatus();
}

// The (epsilon, delta) the mechanisms are calibrated with.
struct MechanismBudget {
  double epsilon = 0;
  double delta = 0;
};

// Charge the decimal the analyst wrote; calibrate with a value never above it.
absl::StatusOr<MechanismBudget> ChargeAndCalibrationBudget(QuerySpec& spec, QueryPlan& plan) {
  ASSIGN_OR_RETURN(plan.epsilon_units, EpsilonToUnits(spec.epsilon, "epsilon"));
  ASSIGN_OR_RETURN(plan.delta_units, DeltaToUnits(spec.delta, "delta"));
  spec.epsilon = EpsilonFromUnits(plan.epsilon_units);
  spec.delta = DeltaFromUnits(plan.delta_units);
  return MechanismBudget{MechanismEpsilon(plan.epsilon_units), MechanismDelta(plan.delta_units)};
}

// Keys selected from the data: plans the partition selection and returns what is left for the
// aggregates.
MechanismBudget PlanKeySelection(const QuerySpec& spec, int m, MechanismBudget budget,
                                 QueryPlan& plan) {
  // Half of epsilon and all of the (Laplace) delta select the keys (Desfontaines, Voss, Gipson,
  // Mandayam 2022); the rest releases the aggregates of the selected keys. Basic composition of
  // the two (Dwork & Roth 2014, Thm. 3.16) gives (epsilon, delta) in total.
  // With the Gaussian mechanism the aggregates need delta too: half each.
  const bool gaussian = spec.mechanism == MechanismKind::kGaussian;
  // Shares are rounded toward zero (ShareOf), so the parts never add up to more than the charge.
  const double half_epsilon = ShareOf(budget.epsilon, 2);
  const double half_delta = ShareOf(budget.delta, 2);
  plan.selection = {true, half_epsilon, gaussian ? half_delta : budget.delta, m};
  plan.scan.count_units = true;
  return MechanismBudget{half_epsilon, gaussian ? half_delta : 0.0};
}

// Only the group keys are released (QuerySpec::keys_only): selected from the data, all of the
// budget selects them (Desfontaines, Voss, Gipson, Mandayam 2022); declared, they are public and
// released as they are, reading nothing the answer depends on. No noisy statistic is released.
absl::Status PlanKeysOnly(const QuerySpec& spec, int m, MechanismBudget budget, bool select_keys,
                          QueryPlan& plan) {
  if (spec.aggregate != AggregateKind::kCount || spec.group_by.empty() ||
      spec.value_expression != nullptr || spec.pre_aggregate) {
    return absl::InvalidArgumentError(
        "keys_only: a release of group keys alone needs group_by and a plain count");
  }
  plan.spec.column.clear();
  plan.spec.lower.reset();
  plan.spec.upper.reset();
  plan.scan.sum_values = false;
  if (select_keys) {
    plan.selection = {true, budget.epsilon, budget.delta, m};
    plan.scan.count_units = true;
  }
  return absl::OkStatus();
}

// The aggregate's noise components, scaled to the m groups a unit can change, and the scan's
// value fields.
absl::Status PlanComponents(const DatasetSchema& schema, const AggregateColumn& aggregate_column,
                            MechanismBudget budget, QueryPlan& plan) {
  QuerySpec& spec = plan.spec;
  const int k = spec.max_contributions;
  const int m = plan.scan.max_partitions;
  // A unit changes at most m groups, each by at most the per-group sensitivity: the released
  // vector's L1 sensitivity is m times the per-group one (Wilson et al. 2020, §3; DESIGN.md §3),
  // its L2 sensitivity sqrt(m) times (the Gaussian's; CKS 2020 Thm 14 calibrates the vector).
  // Within a group a histogram's K rows move its bucket vector by at most K in L1 and in L2.
  const double group_factor = spec.mechanism == MechanismKind::kGaussian
                                  ? std::sqrt(static_cast<double>(m))
                                  : static_cast<double>(m);
  const auto push = [&](NoiseComponent::Statistic stat, double eps, double delta, double per_group,
                        int coordinates) {
    plan.components.push_back({stat, eps, delta, per_group * group_factor, coordinates * m});
  };

  AggregateContext context{spec,
                           plan,
                           aggregate_column.column,
                           aggregate_column.text_histogram,
                           budget.epsilon,
                           budget.delta,
                           k,
                           m,
                           push};
  const AggregateDescription& description = DescriptionOf(spec.aggregate);
  RETURN_IF_ERROR(description.plan(context));
  if (aggregate_column.expression.checked != nullptr) {
    // The scan reads the expression, not the stand-in column that carried its bounds.
    plan.scan.value_column.clear();
    plan.scan.value_expression = aggregate_column.expression.checked;
  }
  plan.scan.sum_values = description.sums_values || plan.scan.pre_aggregate_count;
  plan.scan.bound_by_row_rank = schema.CanBoundByRowRank() && !spec.pre_aggregate;
  return absl::OkStatus();
}

}  // namespace

bool QueryPlan::multi_valued() const {
  return grouped() || spec.aggregate == AggregateKind::kHistogram;
}

absl::StatusOr<QueryPlan> PlanQuery(const QuerySpec& spec_in, const DatasetSchema& schema) {
  QueryPlan plan;
  plan.spec = spec_in;
  QuerySpec& spec = plan.spec;
  RETURN_IF_ERROR(CheckAggregateOptions(spec));

  plan.scan.dataset_id = schema.id;
  plan.scan.dataset_version = schema.version;
  plan.scan.shards = schema.shards;
  plan.scan.unit_column = schema.privacy_unit;
  plan.scan.join = schema.join;
  ASSIGN_OR_RETURN(bool select_keys, PlanGroups(schema, spec, plan));
  if (spec.row_condition != nullptr) {
    ASSIGN_OR_RETURN(plan.scan.row_condition, CheckRowCondition(*spec.row_condition, schema));
  }
  ASSIGN_OR_RETURN(const AggregateColumn aggregate_column, ResolveAggregateColumn(schema, spec));
  if (aggregate_column.text_histogram) {
    RETURN_IF_ERROR(PlanTextHistogram(schema, *aggregate_column.column, spec, plan, select_keys));
  }

  // Keys selected from the data: a NULL group key is a group like any other (ZetaSQL), released
  // only if partition selection keeps it. Declared keys are the released key set: NULL is not one.
  if (select_keys) plan.scan.null_group_columns = spec.group_by.size();

  RETURN_IF_ERROR(CheckPreAggregation(spec));
  if (!plan.grouped()) spec.max_partitions = 1;  // one group: nothing to bound
  RETURN_IF_ERROR(ValidatePrivacyParameters(spec, select_keys));
  if (spec.aggregate == AggregateKind::kQuantile && spec.mechanism == MechanismKind::kGaussian) {
    return absl::InvalidArgumentError(
        "mechanism: quantiles use the exponential mechanism (pure epsilon-DP); leave mechanism "
        "unset or laplace");
  }
  ASSIGN_OR_RETURN(MechanismBudget budget, ChargeAndCalibrationBudget(spec, plan));

  const int m = plan.grouped() ? spec.max_partitions : 1;
  plan.scan.max_contributions = spec.max_contributions;
  plan.scan.max_partitions = m;
  if (spec.keys_only) {
    RETURN_IF_ERROR(PlanKeysOnly(spec, m, budget, select_keys, plan));
  } else {
    if (select_keys) budget = PlanKeySelection(spec, m, budget, plan);
    RETURN_IF_ERROR(PlanComponents(schema, aggregate_column, budget, plan));
  }
  plan.fingerprint = Fingerprint(spec, plan.epsilon_units, plan.delta_units, plan.grouped()) +
                     ExpressionFingerprint(plan.scan) + (spec.keys_only ? "|keys_only=1" : "");
  // Every joined table's id and version: a reload of either side changes the answer.
  if (schema.join != nullptr)
    absl::StrAppend(&plan.fingerprint, "|join=", schema.join->CanonicalText());
  return plan;
}

}  // namespace dpq::query
