#include "server/engine/plan_report.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/query/expression/expression.h"

namespace dpq::engine {

absl::string_view StatisticName(query::NoiseComponent::Statistic statistic) {
  using Statistic = query::NoiseComponent::Statistic;
  switch (statistic) {
    case Statistic::kCount: return "count";
    case Statistic::kSum: return "sum";
    case Statistic::kSumSquares: return "sum_squares";
    case Statistic::kBucketCounts: return "bucket_counts";
  }
  return "count";
}

absl::string_view KeySourceName(KeysReport::Source source) {
  switch (source) {
    case KeysReport::Source::kUngrouped: return "none";
    case KeysReport::Source::kDeclared: return "declared";
    case KeysReport::Source::kSelected: return "selected";
  }
  return "none";
}

size_t SummaryComponent(const query::QueryPlan& plan) {
  const bool moments = plan.spec.aggregate == query::AggregateKind::kVariance ||
                       plan.spec.aggregate == query::AggregateKind::kStddev;
  return moments && plan.components.size() > 1 ? 1 : 0;
}

absl::StatusOr<std::vector<Calibrated>> CalibrateComponents(const query::QueryPlan& plan) {
  std::vector<Calibrated> out;
  const double level = ComponentConfidence(plan);
  for (const query::NoiseComponent& c : plan.components) {
    ASSIGN_OR_RETURN(Calibrated calibrated, Calibrate(plan.spec.mechanism, c, level));
    out.push_back(std::move(calibrated));
  }
  return out;
}

namespace {

KeysReport KeysOf(const query::QueryPlan& plan) {
  KeysReport out;
  if (!plan.grouped()) return out;
  if (plan.selection.needed) {
    out.source = KeysReport::Source::kSelected;
    out.selection_epsilon = plan.selection.epsilon;
    out.selection_delta = plan.selection.delta;
    out.max_partitions = plan.selection.max_partitions;
    return out;
  }
  out.source = KeysReport::Source::kDeclared;
  out.declared = plan.declared_keys;
  out.max_partitions = plan.scan.max_partitions;
  return out;
}

ExpressionReport ExpressionOf(const query::QueryPlan& plan, const query::QuerySpec& asked) {
  ExpressionReport out;
  const query::expression::CheckedExpression* e = plan.scan.value_expression.get();
  if (e == nullptr) return out;
  out.present = true;
  out.canonical = e->canonical;
  if (plan.spec.aggregate == query::AggregateKind::kCount) {
    out.counted_only = true;  // rows where it is not NULL are counted; nothing is clamped
    return out;
  }
  out.clamp_lower = plan.scan.clamp_lower;
  out.clamp_upper = plan.scan.clamp_upper;
  // QuerySpec: the clamp range is [lower, upper] when given, else the derived bounds.
  out.derived = !(asked.lower.has_value() && asked.upper.has_value());
  if (out.derived) out.derivation = e->derivation;
  return out;
}

}  // namespace

std::vector<ComponentReport> ComponentsOf(const query::QueryPlan& plan,
                                          const std::vector<Calibrated>& calibrated) {
  std::vector<ComponentReport> out;
  for (size_t i = 0; i < plan.components.size() && i < calibrated.size(); ++i) {
    const query::NoiseComponent& c = plan.components[i];
    out.push_back({c.statistic, plan.spec.mechanism, c.epsilon, c.delta, c.sensitivity,
                   calibrated[i].mechanism->noise_scale()});
  }
  return out;
}

PlanReport ReportOf(const query::QueryPlan& plan, const std::vector<Calibrated>& calibrated,
                    const query::QuerySpec& asked) {
  PlanReport out;
  out.components = ComponentsOf(plan, calibrated);
  if (plan.spec.aggregate == query::AggregateKind::kQuantile) {
    out.quantile.planned = true;
    out.quantile.exponential = plan.quantile_epsilon > 0;
    out.quantile.selection_epsilon = plan.quantile_epsilon;
  }
  out.keys = KeysOf(plan);
  out.value_expression = ExpressionOf(plan, asked);
  return out;
}

JoinReport JoinReportOf(const query::DatasetSchema& joined) {
  JoinReport out;
  if (joined.join == nullptr) return out;
  const query::JoinSource& join = *joined.join;
  out.present = true;
  for (const query::JoinedTable& t : join.tables)
    out.tables.push_back({t.name, t.alias, t.is_public});
  const auto written = [&join](int table, const std::string& column) {
    return absl::StrCat(join.tables[table].alias, ".", column);
  };
  for (const query::JoinEquality& e : join.on) {
    out.conditions.push_back(absl::StrCat(written(e.right_table, e.right_column), " = ",
                                          written(e.left_table, e.left_column)));
  }
  out.privacy_unit = join.WrittenNames(joined.privacy_unit);
  // Bounding reads the joined rows (store/bounding_sql.h): a unit's rows multiplied by the join
  // are still one unit's, so K (or the per-unit pre-aggregation) caps them after the join; the
  // stored row rank orders one table's rows and is never used.
  out.bounding = absl::StrCat("after the join, per ", out.privacy_unit,
                              ": at most K joined rows chosen at random, or one clamped "
                              "per-unit value (per part: column K)");
  return out;
}

}  // namespace dpq::engine
