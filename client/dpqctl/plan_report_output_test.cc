#include "client/dpqctl/plan_report_output.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;

dpq::v1::PlanResponse VarianceWithDeclaredKeysAndExpression() {
  dpq::v1::PlanResponse r;
  const struct {
    const char* statistic;
    double sensitivity, scale;
  } components[] = {{"sum", 50, 167.50003}, {"sum_squares", 2500, 8400.0001}, {"count", 1, 2.5}};
  for (const auto& c : components) {
    dpq::v1::NoiseComponent* out = r.add_components();
    out->set_statistic(c.statistic);
    out->set_mechanism(dpq::v1::MECHANISM_LAPLACE);
    out->set_epsilon(1.0 / 3);
    out->set_sensitivity(c.sensitivity);
    out->set_noise_scale(c.scale);
  }
  r.mutable_keys()->set_source("declared");
  for (const char* k : {"1", "2", "7"}) r.mutable_keys()->add_keys()->add_values(k);
  dpq::v1::ValueExpression* e = r.mutable_value_expression();
  e->set_canonical("(amount + 1)");
  e->set_lower(1);
  e->set_upper(101);
  e->set_derived(true);
  e->add_derivation("amount in [0, 100] (declared)");
  e->add_derivation("amount + 1 in [1, 101]");
  return r;
}

TEST(PlanReportOutputTest, TextIsAlignedRoundedAndNewlineTerminated) {
  std::ostringstream out;
  WritePlanReportText(out, ReportOf(VarianceWithDeclaredKeysAndExpression()), "  ");
  EXPECT_EQ(out.str(),
            "  NOISE        MECHANISM  EPSILON   DELTA  SENSITIVITY  NOISE SCALE\n"
            "  sum          laplace    0.333333  0.0    50           167.5\n"
            "  sum_squares  laplace    0.333333  0.0    2500         8400\n"
            "  count        laplace    0.333333  0.0    1            2.5\n"
            "  keys: declared, all 3 released: 1, 2, 7\n"
            "  value: (amount + 1) clamped to [1, 101], derived from declared bounds:\n"
            "    amount in [0, 100] (declared)\n"
            "    amount + 1 in [1, 101]\n");
}

TEST(PlanReportOutputTest, SelectedKeysAndQuantileMethodsAreStated) {
  dpq::v1::PlanResponse r;
  r.mutable_keys()->set_source("selected");
  r.mutable_keys()->set_selection_epsilon(0.1);
  r.mutable_keys()->set_selection_delta(1e-6);
  r.mutable_keys()->set_max_partitions(1);
  r.mutable_quantile()->set_method("exponential");
  r.mutable_quantile()->set_epsilon(0.25);
  std::ostringstream out;
  WritePlanReportText(out, ReportOf(r), "");
  EXPECT_THAT(out.str(), HasSubstr("quantiles: chosen by the exponential mechanism at epsilon "
                                   "0.25 per group"));
  EXPECT_THAT(out.str(), HasSubstr("keys: selected from the data (partition selection at epsilon "
                                   "0.1, delta 1e-06; at most 1 group per unit)\n"));
  r.mutable_quantile()->set_method("histogram");
  std::ostringstream histogram;
  WritePlanReportText(histogram, ReportOf(r), "");
  EXPECT_THAT(histogram.str(), HasSubstr("read off the noisy histogram's CDF"));
}

TEST(PlanReportOutputTest, GivenBoundsSaySoWithoutDerivation) {
  dpq::v1::PlanResponse r;
  r.mutable_value_expression()->set_canonical("(amount * 2)");
  r.mutable_value_expression()->set_lower(0);
  r.mutable_value_expression()->set_upper(10);
  std::ostringstream out;
  WritePlanReportText(out, ReportOf(r), "");
  EXPECT_EQ(out.str(), "value: (amount * 2) clamped to [0, 10], bounds given in the query\n");
}

TEST(PlanReportOutputTest, JsonHoldsEveryPart) {
  nlohmann::json json = nlohmann::json::object();
  AddPlanReportJson(ReportOf(VarianceWithDeclaredKeysAndExpression()), json);
  ASSERT_EQ(json["components"].size(), 3u);
  EXPECT_EQ(json["components"][1]["statistic"], "sum_squares");
  EXPECT_EQ(json["components"][1]["noise_scale"], 8400.0001);
  EXPECT_EQ(json["components"][1]["mechanism"], "laplace");
  EXPECT_EQ(json["keys"]["source"], "declared");
  EXPECT_EQ(json["keys"]["keys"], nlohmann::json({{"1"}, {"2"}, {"7"}}));
  EXPECT_FALSE(json.contains("quantile"));
  EXPECT_EQ(json["value_expression"]["canonical"], "(amount + 1)");
  EXPECT_EQ(json["value_expression"]["derived"], true);
  EXPECT_EQ(json["value_expression"]["derivation"].size(), 2u);
}

dpq::v1::JoinPlan PatientsVisitsRegions() {
  dpq::v1::JoinPlan j;
  const struct {
    const char *dataset, *alias;
    bool is_public;
  } tables[] = {{"patients", "p", false}, {"visits", "visits", false}, {"regions", "r", true}};
  for (const auto& t : tables) {
    dpq::v1::JoinPlan::Table* out = j.add_tables();
    out->set_dataset(t.dataset);
    out->set_alias(t.alias);
    out->set_is_public(t.is_public);
  }
  j.add_conditions("visits.pid = p.pid");
  j.add_conditions("r.code = p.region");
  j.set_privacy_unit("p.pid");
  j.set_bounding("after the join, per p.pid");
  return j;
}

TEST(PlanReportOutputTest, JoinTextNamesTablesKeysUnitAndBounding) {
  std::ostringstream out;
  WriteJoinPlanText(out, PatientsVisitsRegions(), "> ");
  EXPECT_EQ(out.str(),
            "> join: patients p JOIN visits ON visits.pid = p.pid JOIN regions r (public) ON "
            "r.code = p.region\n"
            ">   privacy unit: p.pid\n"
            ">   bounding: after the join, per p.pid\n");
}

TEST(PlanReportOutputTest, JoinJsonHasEveryField) {
  const nlohmann::json j = JoinPlanToJson(PatientsVisitsRegions());
  ASSERT_EQ(j["tables"].size(), 3u);
  EXPECT_EQ(j["tables"][2]["dataset"], "regions");
  EXPECT_EQ(j["tables"][2]["public"], true);
  EXPECT_EQ(j["tables"][0]["public"], false);
  EXPECT_EQ(j["conditions"][1], "r.code = p.region");
  EXPECT_EQ(j["privacy_unit"], "p.pid");
  EXPECT_EQ(j["bounding"], "after the join, per p.pid");
}

}  // namespace
}  // namespace dpqctl
