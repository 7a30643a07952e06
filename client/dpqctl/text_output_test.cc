#include "client/dpqctl/text_output.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "client/dpqctl/shard_output.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(FormatNumberTest, PrintsShortestRoundTrippingDecimal) {
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(42), "42.0");
  EXPECT_EQ(FormatNumber(1e-6), "1e-06");
  EXPECT_EQ(FormatNumber(0.30000000000000004), "0.30000000000000004");
}

TEST(FormatNumberTest, SpellsOutNonFiniteValues) {
  EXPECT_EQ(FormatNumber(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatNumber(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FormatNumber(std::nan("")), "nan");
}

// Raw doubles (1742.8666067123413, noise scale 200.0001220703125) are rounded where
// the noise makes further digits meaningless.
TEST(FormatToPrecisionTest, RoundsAtTheSecondSignificantDigitOfTheHalfWidth) {
  EXPECT_EQ(FormatToPrecision(1742.8666067123413, 34.7), "1743");
  EXPECT_EQ(FormatToPrecision(1742.8666067123413, 347), "1740");
  EXPECT_EQ(FormatToPrecision(0.51234, 0.0123), "0.512");
  EXPECT_EQ(FormatToPrecision(-0.0004, 0.5), "0.00");  // no "-0.00"
  EXPECT_EQ(FormatToPrecision(-12.3, 40), "-12");
  EXPECT_EQ(FormatToPrecision(5.25, 0), "5.25");  // no usable half-width: 4 significant digits
  EXPECT_EQ(FormatToPrecision(std::numeric_limits<double>::infinity(), 1), "inf");
}

TEST(FormatSignificantTest, DropsPaddingZeros) {
  EXPECT_EQ(FormatSignificant(200.0001220703125, 3), "200");
  EXPECT_EQ(FormatSignificant(2.0, 3), "2");
  EXPECT_EQ(FormatSignificant(0.012345, 3), "0.0123");
  EXPECT_EQ(FormatSignificant(123456, 3), "123000");
  EXPECT_EQ(FormatSignificant(0, 3), "0");
}

TEST(WriteListAuditTextTest, MultiRowReleasesShowTheirRowCountNotZero) {
  dpq::v1::ListAuditResponse response;
  dpq::v1::AuditEntry* scalar = response.add_entries();
  scalar->set_value(41.5);
  scalar->set_rows(1);
  dpq::v1::AuditEntry* histogram = response.add_entries();
  histogram->set_aggregate(dpq::v1::AGGREGATE_HISTOGRAM);
  histogram->set_rows(5);
  dpq::v1::AuditEntry* unanswered = response.add_entries();
  unanswered->set_rows(0);
  std::ostringstream out;
  WriteListAuditText(out, response);
  EXPECT_THAT(out.str(), HasSubstr("41.5"));
  EXPECT_THAT(out.str(), HasSubstr("(5 rows)"));
  EXPECT_THAT(out.str(), HasSubstr("(not released)"));
}

TEST(WriteListAuditTextTest, BatchesAndTrainingReportsShowTheirKindNotUnspecified) {
  dpq::v1::ListAuditResponse response;
  dpq::v1::AuditEntry* batch = response.add_entries();
  batch->set_kind("batch");
  batch->set_rows(3);
  dpq::v1::AuditEntry* training = response.add_entries();
  training->set_kind("training");
  training->set_column("run-7");
  training->set_rows(1);
  std::ostringstream out;
  WriteListAuditText(out, response);
  EXPECT_THAT(out.str(), Not(HasSubstr("unspecified")));
  EXPECT_THAT(out.str(), HasSubstr("batch"));
  EXPECT_THAT(out.str(), HasSubstr("training"));
  EXPECT_THAT(out.str(), HasSubstr("run-7"));
}

TEST(WriteTableTest, PadsColumnsToWidestCell) {
  std::ostringstream out;
  WriteTable(out, {"A", "BB"}, {{"long", "x"}, {"s", "yyy"}});
  EXPECT_EQ(out.str(), "A     BB\nlong  x\ns     yyy\n");
}

TEST(WriteTableTest, CountsUtf8CodePointsNotBytes) {
  std::ostringstream out;
  WriteTable(out, {"A", "B"}, {{"\u00b11", "x"}, {"abc", "y"}});
  EXPECT_EQ(out.str(), "A    B\n\u00b11   x\nabc  y\n");
}

TEST(WriteDatasetTextTest, ShowsDashForAbsentBounds) {
  dpq::v1::Dataset dataset;
  dataset.set_name("people");
  dpq::v1::Column* age = dataset.add_columns();
  age->set_name("age");
  age->set_type(dpq::v1::COLUMN_TYPE_INTEGER);
  age->set_lower(0);
  age->set_upper(120);
  dpq::v1::Column* city = dataset.add_columns();
  city->set_name("city");
  city->set_type(dpq::v1::COLUMN_TYPE_TEXT);
  std::ostringstream out;
  WriteDatasetText(out, dataset);
  EXPECT_THAT(out.str(), HasSubstr("age     integer  0.0    120.0\n"));
  EXPECT_THAT(out.str(), HasSubstr("city    text     -      -\n"));
}

TEST(WriteDatasetTextTest, NamesThePopulationOrSaysThatATableIsPublic) {
  dpq::v1::Dataset dataset;
  dataset.set_name("visits");
  dataset.set_privacy_unit("patient_id");
  dataset.set_population("clinic");
  std::ostringstream out;
  WriteDatasetText(out, dataset);
  EXPECT_THAT(out.str(), HasSubstr("privacy unit:  patient_id\npopulation:    clinic\n"));
  dpq::v1::Dataset regions;
  regions.set_name("regions");
  regions.set_is_public(true);
  std::ostringstream public_out;
  WriteDatasetText(public_out, regions);
  EXPECT_THAT(public_out.str(), HasSubstr("public table:  not personal"));
  EXPECT_THAT(public_out.str(), Not(HasSubstr("privacy unit:")));
}

TEST(WriteDatasetTextTest, NoCategoriesColumnWithoutCategories) {
  dpq::v1::Dataset dataset;
  dataset.add_columns()->set_name("city");
  std::ostringstream out;
  WriteDatasetText(out, dataset);
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("CATEGORIES")));
}

TEST(WriteDatasetTextTest, ShowsCategoriesWhenDeclared) {
  dpq::v1::Dataset dataset;
  dpq::v1::Column* age = dataset.add_columns();
  age->set_name("age");
  age->set_type(dpq::v1::COLUMN_TYPE_INTEGER);
  dpq::v1::Column* city = dataset.add_columns();
  city->set_name("city");
  city->set_type(dpq::v1::COLUMN_TYPE_TEXT);
  city->add_categories("oslo");
  city->add_categories("new york");
  std::ostringstream out;
  WriteDatasetText(out, dataset);
  EXPECT_THAT(out.str(), HasSubstr("COLUMN  TYPE     LOWER  UPPER  CATEGORIES\n"));
  EXPECT_THAT(out.str(), HasSubstr("age     integer  -      -      -\n"));
  EXPECT_THAT(out.str(), HasSubstr("city    text     -      -      oslo|new york\n"));
}

TEST(WriteDatasetTextTest, CutsLongCategoryListsShort) {
  dpq::v1::Dataset dataset;
  dpq::v1::Column* zip = dataset.add_columns();
  zip->set_name("zip");
  for (int i = 0; i < 25; ++i) zip->add_categories("z" + std::to_string(i));
  std::ostringstream out;
  WriteDatasetText(out, dataset);
  EXPECT_THAT(out.str(), HasSubstr("|z19|... (25 in all)\n"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("z20")));
}

TEST(WriteBudgetTextTest, NamesPresetWhenSet) {
  dpq::v1::Budget budget;
  budget.set_dataset("people");
  budget.set_accountant("rdp");
  std::ostringstream plain;
  WriteBudgetText(plain, budget);
  EXPECT_THAT(plain.str(), HasSubstr("budget of population 'people' (rdp composition)\n"));
  budget.set_preset("census");
  budget.add_warnings("not in the text");
  std::ostringstream with_preset;
  WriteBudgetText(with_preset, budget);
  EXPECT_THAT(with_preset.str(),
              HasSubstr("budget of population 'people' (rdp composition, preset census)\n"));
  EXPECT_THAT(with_preset.str(), ::testing::Not(HasSubstr("not in the text")));
}

TEST(WriteWarningsTextTest, OneLinePerWarningWithContext) {
  google::protobuf::RepeatedPtrField<std::string> warnings;
  *warnings.Add() = "a";
  *warnings.Add() = "b";
  std::ostringstream out;
  WriteWarningsText(out, warnings);
  WriteWarningsText(out, warnings, "query 2: ");
  EXPECT_EQ(out.str(), "warning: a\nwarning: b\nwarning: query 2: a\nwarning: query 2: b\n");
}

dpq::v1::PlanResponse Plan(double epsilon, dpq::v1::Mechanism mechanism, double error) {
  dpq::v1::PlanResponse response;
  response.set_epsilon(epsilon);
  response.set_mechanism(mechanism);
  response.set_sensitivity(1);
  response.set_error(error);
  response.set_confidence(0.95);
  return response;
}

TEST(WritePlanTextTest, SaysErrorConfidenceAndMechanism) {
  dpq::v1::PlanResponse response = Plan(0.5, dpq::v1::MECHANISM_LAPLACE, 5.99);
  response.set_noise_scale(2);
  std::ostringstream out;
  WritePlanText(out, response);
  EXPECT_EQ(out.str(),
            "epsilon 0.5 gives \u00b15.99 at confidence 0.95 (laplace, noise scale 2.0, "
            "sensitivity 1.0)\n");
  response.set_mechanism(dpq::v1::MECHANISM_GAUSSIAN);
  response.set_delta(1e-6);
  std::ostringstream gaussian;
  WritePlanText(gaussian, response);
  EXPECT_THAT(gaussian.str(), HasSubstr("epsilon 0.5, delta 1e-06 gives"));
}

TEST(WritePlanTextTest, QuantilePlansSayRankErrorInRows) {
  dpq::v1::PlanResponse response = Plan(1, dpq::v1::MECHANISM_EXPONENTIAL, 19.75);
  response.set_rank_error(true);
  std::ostringstream out;
  WritePlanText(out, response);
  EXPECT_EQ(out.str(),
            "epsilon 1.0 gives rank \u00b119.75 rows at confidence 0.95 (exponential, noise "
            "scale 0.0, sensitivity 1.0)\n");
}

dpq::v1::QueryResponse ScalarResponse() {
  dpq::v1::QueryResponse response;
  response.set_value(41.5);
  response.set_mechanism(dpq::v1::MECHANISM_LAPLACE);
  response.set_epsilon(0.5);
  response.set_noise_scale(2);
  response.set_sensitivity(1);
  response.set_max_contributions(1);
  response.set_request_id("r1");
  response.mutable_interval()->set_confidence(0.95);
  response.mutable_interval()->set_lower(35.5);
  response.mutable_interval()->set_upper(47.5);
  return response;
}

TEST(WriteQueryTextTest, ScalarRowPrintsLikeAResponseWithoutRows) {
  dpq::v1::QueryResponse without_rows = ScalarResponse();
  dpq::v1::QueryResponse with_row = ScalarResponse();
  dpq::v1::ResultRow* row = with_row.add_rows();
  row->set_value(41.5);
  *row->mutable_interval() = with_row.interval();
  row->set_noise_scale(2);
  std::ostringstream before, after;
  WriteQueryText(before, without_rows, dpq::v1::AGGREGATE_COUNT);
  WriteQueryText(after, with_row, dpq::v1::AGGREGATE_COUNT);
  EXPECT_EQ(before.str(), after.str());
  EXPECT_EQ(
      after.str(),
      "value:        41.5\n"
      "interval:     95.0% [35.5, 47.5]\n"
      "mechanism:    laplace (noise scale 2, sensitivity 1.0)\n"
      "charged:      epsilon 0.5, delta 0.0\n"
      "max contributions per unit: 1\n"
      "remaining:    epsilon 0.0, delta 0.0\n"
      "request id:   r1\n"
      "rounded:      values at the 2nd significant digit of their interval's half-width; --json "
      "gives full precision\n");
}

TEST(WriteQueryTextTest, HistogramPrintsLabelledTable) {
  dpq::v1::QueryResponse response = ScalarResponse();
  for (const auto& [label, value] : {std::pair<std::string, double>{"[0, 10)", 3},
                                     std::pair<std::string, double>{"[10, 20]", 14}}) {
    dpq::v1::ResultRow* row = response.add_rows();
    row->set_label(label);
    row->set_value(value);
    row->set_noise_scale(2);
    row->mutable_interval()->set_confidence(0.9);
    row->mutable_interval()->set_lower(value - 4);
    row->mutable_interval()->set_upper(value + 4);
  }
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_HISTOGRAM);
  EXPECT_THAT(out.str(), HasSubstr("LABEL     VALUE  90.0% INTERVAL  NOISE SCALE\n"
                                   "[0, 10)   3.0    [-1.0, 7.0]     2\n"
                                   "[10, 20]  14.0   [10.0, 18.0]    2\n"
                                   "mechanism:    laplace (sensitivity 1.0)\n"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("value:")));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("max partitions")));
}

TEST(WriteQueryTextTest, KeysWithoutNamesAreHeadedKey) {
  dpq::v1::QueryResponse response = ScalarResponse();
  response.set_max_partitions(3);
  dpq::v1::ResultRow* row = response.add_rows();
  row->add_key("a");
  row->add_key("b");
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_SUM);
  EXPECT_THAT(out.str(), HasSubstr("KEY1  KEY2  VALUE"));
  EXPECT_THAT(out.str(), HasSubstr("max partitions per unit: 3\n"));
  std::ostringstream named;
  WriteQueryText(named, response, dpq::v1::AGGREGATE_SUM, {"city", "sex"});
  EXPECT_THAT(named.str(), HasSubstr("CITY  SEX  VALUE"));
}

TEST(WriteQueryTextTest, QuantileRowsShowRankError) {
  dpq::v1::QueryResponse response = ScalarResponse();
  response.clear_interval();
  dpq::v1::ResultRow* row = response.add_rows();
  row->set_label("q=0.5");
  row->set_value(40);
  row->set_rank_error(12.5);
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_QUANTILE);
  EXPECT_THAT(out.str(), HasSubstr("LABEL  VALUE  INTERVAL  NOISE SCALE\n"));
  EXPECT_THAT(out.str(), HasSubstr("q=0.5  40     rank \u00b113"));
}

TEST(WriteQueryTextTest, GroupByWithNoReleasedGroupSaysSo) {
  dpq::v1::QueryResponse response = ScalarResponse();
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_COUNT, {"city"});
  EXPECT_THAT(out.str(), HasSubstr("no values released"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("value:")));
}

TEST(WriteQueryTextTest, CachedSaysNoBudgetCharged) {
  dpq::v1::QueryResponse response = ScalarResponse();
  response.set_cached(true);
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_COUNT);
  EXPECT_THAT(out.str(), HasSubstr("charged:      cached (no budget charged); the original "
                                   "release cost epsilon 0.5, delta 0.0\n"));
}

TEST(WriteQueryBatchTextTest, BlocksThenJointCharge) {
  dpq::v1::QueryBatchRequest request;
  dpq::v1::QueryRequest* sum = request.add_queries();
  sum->set_aggregate(dpq::v1::AGGREGATE_SUM);
  sum->set_column("income");
  dpq::v1::QueryBatchResponse response;
  *response.add_answers() = ScalarResponse();
  response.set_epsilon(0.4);
  response.set_delta(1e-6);
  response.set_epsilon_sum(0.5);
  response.set_request_id("b1");
  response.mutable_budget()->set_epsilon_remaining(0.6);
  std::ostringstream out;
  WriteQueryBatchText(out, response, request);
  EXPECT_EQ(
      out.str(),
      "query 1 (sum of income):\n"
      "  value:        41.5\n"
      "  interval:     95.0% [35.5, 47.5]\n"
      "  mechanism:    laplace (noise scale 2, sensitivity 1.0)\n"
      "  price alone:  epsilon 0.5, delta 0.0\n"
      "  max contributions per unit: 1\n"
      "\n"
      "charged epsilon=0.4 delta=1e-06 jointly (sum of the queries: 0.5)\n"
      "remaining:    epsilon 0.6, delta 0.0\n"
      "request id:   b1\n"
      "rounded:      values at the 2nd significant digit of their interval's half-width; --json "
      "gives full precision\n");
}

TEST(WriteCreateAnalystTextTest, SaysTheTokenIsShownOnlyOnce) {
  dpq::v1::CreateAnalystResponse response;
  response.set_name("alice");
  response.set_role(dpq::v1::ROLE_ANALYST);
  response.set_token("t0k");
  std::ostringstream out;
  WriteCreateAnalystText(out, response);
  EXPECT_THAT(out.str(), HasSubstr("token: t0k\n"));
  EXPECT_THAT(out.str(), HasSubstr("shown only once"));
}

TEST(WriteQueryTextTest, MeanShowsCountNoiseScaleAndReplay) {
  dpq::v1::QueryResponse response;
  response.set_count_noise_scale(3);
  response.set_replayed(true);
  std::ostringstream out;
  WriteQueryText(out, response, dpq::v1::AGGREGATE_MEAN);
  EXPECT_THAT(out.str(), HasSubstr("count noise scale 3,"));
  EXPECT_THAT(out.str(), HasSubstr("replayed"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("clamped to")));
}

TEST(WriteListShardsTextTest, AlignedRowsWithVersionAndState) {
  dpq::v1::ListShardsResponse response;
  std::ostringstream empty;
  WriteListShardsText(empty, response);
  EXPECT_EQ(empty.str(),
            "no shard servers (add one with `dpqctl shard add NAME --url-file FILE`)\n");
  dpq::v1::Shard* east = response.add_shards();
  east->set_name("east");
  east->set_host("10.0.0.7");
  east->set_port(5432);
  east->set_dbname("dpq");
  east->set_server_version(150018);
  east->set_up(true);
  east->set_probe_seconds(0.0042);
  dpq::v1::Shard* west = response.add_shards();
  west->set_name("west_2");
  west->set_host("::1");
  west->set_port(6432);
  west->set_dbname("rows");
  west->set_server_version(160002);
  west->set_probe_seconds(2.0001);
  std::ostringstream out;
  WriteListShardsText(out, response);
  EXPECT_EQ(out.str(),
            "SHARD   ADDRESS        DATABASE  VERSION  STATE  PROBE\n"
            "east    10.0.0.7:5432  dpq       15.18    up     4.2 ms\n"
            "west_2  [::1]:6432     rows      16.2     down   2000 ms\n");
}

}  // namespace
}  // namespace dpqctl
