#include "server/query/epsilon_guidance.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(EpsilonGuidanceTest, PresetsHaveTheDocumentedRanges) {
  ASSERT_TRUE(FindEpsilonPreset("healthcare").ok());
  EXPECT_EQ(FindEpsilonPreset("healthcare")->lower, 0.5);
  EXPECT_EQ(FindEpsilonPreset("healthcare")->upper, 2);
  EXPECT_EQ(FindEpsilonPreset("census")->upper, 1);
  EXPECT_EQ(FindEpsilonPreset("ab-testing")->upper, 8);
  EXPECT_EQ(EpsilonPresets().size(), 6u);
}

TEST(EpsilonGuidanceTest, UnknownPresetNamesTheKnownOnes) {
  absl::StatusOr<EpsilonPreset> p = FindEpsilonPreset("finance");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("healthcare"));
}

TEST(EpsilonGuidanceTest, BudgetOutsideThePresetRangeWarnsNamingTheRange) {
  EXPECT_THAT(BudgetWarnings(1.0, "healthcare"), IsEmpty());
  EXPECT_THAT(BudgetWarnings(6.0, "healthcare"), ElementsAre(HasSubstr("0.5-2 for healthcare")));
  EXPECT_THAT(BudgetWarnings(0.05, "census"),
              ElementsAre(HasSubstr("below the usual range 0.1-1")));
  EXPECT_THAT(BudgetWarnings(20, ""), ElementsAre(HasSubstr("0.1-8")));
  EXPECT_THAT(BudgetWarnings(4, ""), IsEmpty());
}

TEST(EpsilonGuidanceTest, OnlyQueriesAboveTheWholeRangeWarn) {
  EXPECT_THAT(QueryWarnings(0.01, "census"), IsEmpty());  // small queries are normal
  EXPECT_THAT(QueryWarnings(1.5, "census"), ElementsAre(HasSubstr("0.1-1 for census")));
  EXPECT_THAT(QueryWarnings(9, ""), ElementsAre(HasSubstr("0.1-8")));
}

}  // namespace
}  // namespace dpq::query
