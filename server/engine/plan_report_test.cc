#include "server/engine/plan_report.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/noisy_release.h"
#include "server/query/expression/expression.h"
#include "server/query/planner.h"

namespace dpq::engine {
namespace {

using query::AggregateKind;
using Statistic = query::NoiseComponent::Statistic;

query::DatasetSchema Schema() {
  query::DatasetSchema schema;
  schema.id = 7;
  schema.name = "visits";
  schema.privacy_unit = "user_id";
  schema.columns = {
      {"user_id", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"amount", query::ColumnType::kDouble, 0.0, 100.0, {}},
      {"g", query::ColumnType::kInteger, 0.0, 10.0, {}},
  };
  return schema;
}

query::QuerySpec Spec(AggregateKind aggregate) {
  query::QuerySpec spec;
  spec.dataset = "visits";
  spec.aggregate = aggregate;
  spec.column = aggregate == AggregateKind::kCount ? "" : "amount";
  spec.epsilon = 1.0;
  spec.confidence = 0.95;
  return spec;
}

query::QueryPlan Plan(const query::QuerySpec& spec) {
  absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(spec, Schema());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

PlanReport Report(const query::QueryPlan& plan, const query::QuerySpec& asked) {
  absl::StatusOr<std::vector<Calibrated>> calibrated = CalibrateComponents(plan);
  EXPECT_TRUE(calibrated.ok()) << calibrated.status();
  return ReportOf(plan, *calibrated, asked);
}

// Explain's scales are the run's: the release's own calibrated mechanisms, every component.
TEST(PlanReportTest, VarianceReportsEveryComponentAtTheScaleTheReleaseUses) {
  const query::QuerySpec spec = Spec(AggregateKind::kVariance);
  const query::QueryPlan plan = Plan(spec);
  const PlanReport report = Report(plan, spec);
  absl::StatusOr<ReleasePlan> release = PrepareRelease(plan);
  ASSERT_TRUE(release.ok()) << release.status();
  ASSERT_EQ(report.components.size(), 3u);
  EXPECT_EQ(report.components[0].statistic, Statistic::kSum);
  EXPECT_EQ(report.components[1].statistic, Statistic::kSumSquares);
  EXPECT_EQ(report.components[2].statistic, Statistic::kCount);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(report.components[i].noise_scale, release->components[i].mechanism->noise_scale());
    EXPECT_EQ(report.components[i].epsilon, plan.components[i].epsilon);
    EXPECT_EQ(report.components[i].sensitivity, plan.components[i].sensitivity);
    // A Laplace scale is Delta/epsilon plus the grid's adjustment (additive_mechanism.h).
    EXPECT_GE(report.components[i].noise_scale,
              plan.components[i].sensitivity / plan.components[i].epsilon);
  }
  // The run's summary scale is the sum of squares', and its sensitivity the same component's.
  EXPECT_EQ(SummaryComponent(plan), 1u);
  EXPECT_EQ(release->noise_scale, report.components[1].noise_scale);
  EXPECT_EQ(release->sensitivity, report.components[1].sensitivity);
  EXPECT_NE(report.components[0].sensitivity, report.components[1].sensitivity);
  EXPECT_EQ(report.keys.source, KeysReport::Source::kUngrouped);
  EXPECT_FALSE(report.quantile.planned);
  EXPECT_FALSE(report.value_expression.present);
}

TEST(PlanReportTest, FewQuantileLevelsAreChosenByTheExponentialMechanism) {
  query::QuerySpec spec = Spec(AggregateKind::kQuantile);
  spec.quantiles = {0.5};
  const query::QueryPlan plan = Plan(spec);
  const PlanReport report = Report(plan, spec);
  EXPECT_TRUE(report.quantile.planned);
  EXPECT_TRUE(report.quantile.exponential);
  EXPECT_GT(plan.quantile_epsilon, 0);
  EXPECT_EQ(report.quantile.selection_epsilon, plan.quantile_epsilon);
  ASSERT_EQ(report.components.size(), 1u);
  EXPECT_EQ(report.components[0].statistic, Statistic::kBucketCounts);
  EXPECT_GT(report.components[0].noise_scale, 0);
}

TEST(PlanReportTest, ManyQuantileLevelsAreReadOffTheNoisyHistogram) {
  query::QuerySpec spec = Spec(AggregateKind::kQuantile);
  spec.quantiles = {0.1, 0.25, 0.5, 0.75, 0.9, 0.99};  // > kMaxSelectedQuantiles
  const query::QueryPlan plan = Plan(spec);
  const PlanReport report = Report(plan, spec);
  EXPECT_TRUE(report.quantile.planned);
  EXPECT_FALSE(report.quantile.exponential);
  EXPECT_EQ(report.quantile.selection_epsilon, 0);
  absl::StatusOr<ReleasePlan> release = PrepareRelease(plan);
  ASSERT_TRUE(release.ok()) << release.status();
  ASSERT_EQ(report.components.size(), 1u);
  // The whole epsilon is on the histogram: the rows' noise_scale.
  EXPECT_EQ(report.components[0].epsilon, plan.spec.epsilon);
  EXPECT_EQ(report.components[0].noise_scale, release->noise_scale);
}

TEST(PlanReportTest, DeclaredKeysAreTheKeysTheReleaseUses) {
  query::QuerySpec spec = Spec(AggregateKind::kCount);
  spec.group_by = {"g"};
  spec.keys = {"1", "2", "7"};
  const query::QueryPlan plan = Plan(spec);
  const PlanReport report = Report(plan, spec);
  EXPECT_EQ(report.keys.source, KeysReport::Source::kDeclared);
  const std::vector<std::vector<std::string>> expected = {{"1"}, {"2"}, {"7"}};
  EXPECT_EQ(report.keys.declared, expected);
  EXPECT_EQ(report.keys.declared, plan.declared_keys);
}

TEST(PlanReportTest, KeysFromTheDataStateTheSelectionsBudget) {
  query::QuerySpec spec = Spec(AggregateKind::kCount);
  spec.group_by = {"g"};
  spec.delta = 1e-6;
  const query::QueryPlan plan = Plan(spec);
  const PlanReport report = Report(plan, spec);
  ASSERT_TRUE(plan.selection.needed);
  EXPECT_EQ(report.keys.source, KeysReport::Source::kSelected);
  EXPECT_TRUE(report.keys.declared.empty());
  EXPECT_EQ(report.keys.selection_epsilon, plan.selection.epsilon);
  EXPECT_EQ(report.keys.selection_delta, plan.selection.delta);
  EXPECT_GT(report.keys.selection_epsilon, 0);
  EXPECT_GT(report.keys.selection_delta, 0);
}

// The planner does not yet plan per-row expressions: the scan plan is completed by hand.
std::shared_ptr<const query::expression::CheckedExpression> AmountPlusOne() {
  auto e = std::make_shared<query::expression::CheckedExpression>();
  e->canonical = "(amount + 1)";
  e->bounds = query::ValueInterval{1, 101};
  e->derivation = {"amount in [0, 100] (declared)", "amount + 1 in [1, 101]"};
  return e;
}

TEST(PlanReportTest, ValueExpressionWithDerivedBoundsShowsItsDerivation) {
  const query::QuerySpec spec = Spec(AggregateKind::kSum);
  query::QueryPlan plan = Plan(spec);
  plan.scan.value_expression = AmountPlusOne();
  plan.scan.value_column.clear();
  plan.scan.clamp_lower = 1;
  plan.scan.clamp_upper = 101;
  query::QuerySpec asked = spec;  // no bounds given: derived
  const PlanReport report = Report(plan, asked);
  ASSERT_TRUE(report.value_expression.present);
  EXPECT_EQ(report.value_expression.canonical, "(amount + 1)");
  EXPECT_EQ(report.value_expression.clamp_lower, 1);
  EXPECT_EQ(report.value_expression.clamp_upper, 101);
  EXPECT_TRUE(report.value_expression.derived);
  EXPECT_EQ(report.value_expression.derivation, AmountPlusOne()->derivation);
}

TEST(PlanReportTest, ValueExpressionWithGivenBoundsSaysSo) {
  query::QuerySpec asked = Spec(AggregateKind::kSum);
  asked.lower = 5;
  asked.upper = 50;
  query::QueryPlan plan = Plan(asked);
  plan.scan.value_expression = AmountPlusOne();
  const PlanReport report = Report(plan, asked);
  ASSERT_TRUE(report.value_expression.present);
  EXPECT_FALSE(report.value_expression.derived);
  EXPECT_TRUE(report.value_expression.derivation.empty());
  EXPECT_EQ(report.value_expression.clamp_lower, plan.scan.clamp_lower);
  EXPECT_EQ(report.value_expression.clamp_upper, plan.scan.clamp_upper);
  EXPECT_EQ(report.value_expression.clamp_lower, 5);
  EXPECT_EQ(report.value_expression.clamp_upper, 50);
}

TEST(JoinReportTest, StatesTablesConditionsUnitAndBoundingAsWritten) {
  EXPECT_FALSE(JoinReportOf(Schema()).present);
  query::DatasetSchema patients = Schema();
  patients.name = "patients";
  query::DatasetSchema regions;
  regions.id = 9;
  regions.name = "regions";
  regions.is_public = true;
  regions.columns = {{"code", query::ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
  query::JoinRequest request;
  request.tables = {{"patients", "p"}, {"regions", "r"}};
  request.on = {{0, "g", 1, "code"}};
  patients.columns[2].type = query::ColumnType::kText;
  absl::StatusOr<query::DatasetSchema> joined = query::ResolveJoin(request, {patients, regions});
  ASSERT_TRUE(joined.ok()) << joined.status();
  const JoinReport report = JoinReportOf(*joined);
  ASSERT_TRUE(report.present);
  ASSERT_EQ(report.tables.size(), 2u);
  EXPECT_EQ(report.tables[0].dataset, "patients");
  EXPECT_FALSE(report.tables[0].is_public);
  EXPECT_EQ(report.tables[1].alias, "r");
  EXPECT_TRUE(report.tables[1].is_public);
  ASSERT_EQ(report.conditions.size(), 1u);
  EXPECT_EQ(report.conditions[0], "r.code = p.g");
  EXPECT_EQ(report.privacy_unit, "p.user_id");
  EXPECT_NE(report.bounding.find("after the join, per p.user_id"), std::string::npos)
      << report.bounding;
}

}  // namespace
}  // namespace dpq::engine
