#include "server/api/plan_report_convert.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/api/proto_convert.h"
#include "server/api/sql_convert.h"
#include "server/engine/sql_execution.h"

namespace dpq::api {
namespace {

using Statistic = query::NoiseComponent::Statistic;

// A hand-built report: a variance's three components, declared keys and a derived expression.
engine::PlanReport VarianceReport() {
  engine::PlanReport r;
  r.components = {{Statistic::kSum, query::MechanismKind::kLaplace, 0.3, 0, 50, 167.5},
                  {Statistic::kSumSquares, query::MechanismKind::kLaplace, 0.3, 0, 2500, 8400},
                  {Statistic::kCount, query::MechanismKind::kLaplace, 0.4, 0, 1, 2.5}};
  r.keys.source = engine::KeysReport::Source::kDeclared;
  r.keys.declared = {{"1"}, {"2"}, {"7"}};
  r.value_expression.present = true;
  r.value_expression.canonical = "(amount + 1)";
  r.value_expression.clamp_lower = 1;
  r.value_expression.clamp_upper = 101;
  r.value_expression.derived = true;
  r.value_expression.derivation = {"amount in [0, 100] (declared)", "amount + 1 in [1, 101]"};
  return r;
}

template <typename Message>
void ExpectVarianceReport(const Message& m) {
  ASSERT_EQ(m.components_size(), 3);
  EXPECT_EQ(m.components(0).statistic(), "sum");
  EXPECT_EQ(m.components(1).statistic(), "sum_squares");
  EXPECT_EQ(m.components(1).noise_scale(), 8400);
  EXPECT_EQ(m.components(1).sensitivity(), 2500);
  EXPECT_EQ(m.components(1).mechanism(), v1::MECHANISM_LAPLACE);
  EXPECT_EQ(m.components(2).statistic(), "count");
  EXPECT_EQ(m.components(2).epsilon(), 0.4);
  EXPECT_FALSE(m.has_quantile());
  EXPECT_EQ(m.keys().source(), "declared");
  ASSERT_EQ(m.keys().keys_size(), 3);
  EXPECT_EQ(m.keys().keys(2).values(0), "7");
  ASSERT_TRUE(m.has_value_expression());
  EXPECT_EQ(m.value_expression().canonical(), "(amount + 1)");
  EXPECT_EQ(m.value_expression().lower(), 1);
  EXPECT_EQ(m.value_expression().upper(), 101);
  EXPECT_TRUE(m.value_expression().derived());
  ASSERT_EQ(m.value_expression().derivation_size(), 2);
  EXPECT_EQ(m.value_expression().derivation(1), "amount + 1 in [1, 101]");
}

TEST(PlanReportConvertTest, PlanResponseCarriesTheWholeReport) {
  engine::AccuracyPlan plan;
  plan.report = VarianceReport();
  v1::PlanResponse out;
  ToProto(plan, &out);
  ExpectVarianceReport(out);
  EXPECT_EQ(out.mechanism(), v1::MECHANISM_LAPLACE);
}

TEST(PlanReportConvertTest, ExplainSqlPartCarriesTheWholeReport) {
  engine::SqlExplanation e;
  engine::SqlPlanPart part;
  part.function = "VAR_POP";
  part.accuracy.report = VarianceReport();
  e.parts.push_back(part);
  v1::ExplainSqlResponse out;
  ToProto(e, &out);
  ASSERT_EQ(out.parts_size(), 1);
  ExpectVarianceReport(out.parts(0));
}

TEST(PlanReportConvertTest, ExplainSqlCarriesThePopulationAndTheJoin) {
  engine::SqlExplanation e;
  e.population = "patients";
  v1::ExplainSqlResponse alone;
  ToProto(e, &alone);
  EXPECT_EQ(alone.population(), "patients");
  EXPECT_FALSE(alone.has_join());
  e.join.present = true;
  e.join.tables = {{"patients", "p", false}, {"regions", "r", true}};
  e.join.conditions = {"r.code = p.region"};
  e.join.privacy_unit = "p.pid";
  e.join.bounding = "after the join";
  v1::ExplainSqlResponse out;
  ToProto(e, &out);
  ASSERT_TRUE(out.has_join());
  ASSERT_EQ(out.join().tables_size(), 2);
  EXPECT_EQ(out.join().tables(1).dataset(), "regions");
  EXPECT_EQ(out.join().tables(1).alias(), "r");
  EXPECT_TRUE(out.join().tables(1).is_public());
  EXPECT_FALSE(out.join().tables(0).is_public());
  ASSERT_EQ(out.join().conditions_size(), 1);
  EXPECT_EQ(out.join().conditions(0), "r.code = p.region");
  EXPECT_EQ(out.join().privacy_unit(), "p.pid");
  EXPECT_EQ(out.join().bounding(), "after the join");
}

TEST(PlanReportConvertTest, QuantileMechanismIsWhatTheRunUses) {
  engine::AccuracyPlan plan;
  plan.rank_error = true;
  plan.report.quantile = {true, /*exponential=*/true, 0.25};
  v1::PlanResponse selected;
  ToProto(plan, &selected);
  EXPECT_EQ(selected.mechanism(), v1::MECHANISM_EXPONENTIAL);
  EXPECT_EQ(selected.quantile().method(), "exponential");
  EXPECT_EQ(selected.quantile().epsilon(), 0.25);

  plan.report.quantile = {true, /*exponential=*/false, 0};
  plan.mechanism = query::MechanismKind::kLaplace;
  v1::PlanResponse from_histogram;
  ToProto(plan, &from_histogram);
  EXPECT_EQ(from_histogram.mechanism(), v1::MECHANISM_LAPLACE);
  EXPECT_EQ(from_histogram.quantile().method(), "histogram");
}

TEST(PlanReportConvertTest, SelectedKeysCarryTheSelectionsBudgetAndNoList) {
  engine::KeysReport keys;
  keys.source = engine::KeysReport::Source::kSelected;
  keys.selection_epsilon = 0.1;
  keys.selection_delta = 1e-6;
  keys.max_partitions = 2;
  v1::ReleasedKeys out;
  ToProto(keys, &out);
  EXPECT_EQ(out.source(), "selected");
  EXPECT_EQ(out.keys_size(), 0);
  EXPECT_EQ(out.selection_epsilon(), 0.1);
  EXPECT_EQ(out.selection_delta(), 1e-6);
  EXPECT_EQ(out.max_partitions(), 2);
}

TEST(PlanReportConvertTest, RunReportsEveryComponent) {
  engine::QueryOutcome outcome;
  outcome.components = VarianceReport().components;
  v1::QueryResponse out;
  ToProto(outcome, &out);
  ASSERT_EQ(out.components_size(), 3);
  EXPECT_EQ(out.components(0).noise_scale(), 167.5);
  EXPECT_EQ(out.components(1).noise_scale(), 8400);
  EXPECT_EQ(out.components(2).noise_scale(), 2.5);
}

TEST(PlanReportConvertTest, ValueOfAPlainColumnHasNoExpression) {
  engine::AccuracyPlan plan;
  v1::PlanResponse out;
  ToProto(plan, &out);
  EXPECT_FALSE(out.has_value_expression());
  EXPECT_EQ(out.keys().source(), "none");
}

}  // namespace
}  // namespace dpq::api
