#include "client/dpqctl/text_output.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpqctl {
namespace {

using ::testing::HasSubstr;

TEST(FormatNumberTest, PrintsShortestRoundTrippingDecimal) {
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(42), "42.0");
  EXPECT_EQ(FormatNumber(1e-6), "1e-06");
  EXPECT_EQ(FormatNumber(0.30000000000000004), "0.30000000000000004");
}

TEST(WriteTableTest, PadsColumnsToWidestCell) {
  std::ostringstream out;
  WriteTable(out, {"A", "BB"}, {{"long", "x"}, {"s", "yyy"}});
  EXPECT_EQ(out.str(), "A     BB\nlong  x\ns     yyy\n");
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
  EXPECT_THAT(out.str(), HasSubstr("count noise scale 3.0"));
  EXPECT_THAT(out.str(), HasSubstr("replayed"));
  EXPECT_THAT(out.str(), ::testing::Not(HasSubstr("clamped to")));
}

}  // namespace
}  // namespace dpqctl
