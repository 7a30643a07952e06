#include "server/base/validation.h"

#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq {
namespace {

using ::testing::HasSubstr;

TEST(ValidationTest, PositiveRejectsNanInfZeroAndNegative) {
  for (double v :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), 0.0, -1.0}) {
    absl::Status s = ValidateIsPositive(v, "epsilon");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << v;
    EXPECT_THAT(std::string(s.message()), HasSubstr("epsilon")) << v;
  }
  EXPECT_TRUE(ValidateIsPositive(1e-9, "epsilon").ok());
}

TEST(ValidationTest, HalfOpenRangeIncludesLowExcludesHigh) {
  EXPECT_TRUE(ValidateInHalfOpenRange(0.0, 0.0, 1.0, "delta").ok());
  EXPECT_FALSE(ValidateInHalfOpenRange(1.0, 0.0, 1.0, "delta").ok());
  EXPECT_FALSE(ValidateInHalfOpenRange(-1e-300, 0.0, 1.0, "delta").ok());
}

TEST(ValidationTest, OpenRangeExcludesBothEnds) {
  EXPECT_FALSE(ValidateInOpenRange(0.0, 0.0, 1.0, "delta").ok());
  EXPECT_TRUE(ValidateInOpenRange(0.5, 0.0, 1.0, "delta").ok());
}

TEST(ValidationTest, IdentifierAcceptsLowercaseSnakeCase) {
  EXPECT_TRUE(ValidateIdentifier("person_id", "column").ok());
  EXPECT_TRUE(ValidateIdentifier("_x9", "column").ok());
}

TEST(ValidationTest, IdentifierRejectsInjectionAndOddCharacters) {
  for (const char* bad : {"", "9abc", "Name", "a-b", "a b", "x\"; drop table t; --", "é",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    absl::Status s = ValidateIdentifier(bad, "column");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("column")) << bad;
  }
}

TEST(ValidationTest, IdentifierWithNulOrControlCharacterIsRefusedAndShownEscaped) {
  const std::string with_nul("slid\0xyz", 8);
  absl::Status s = ValidateIdentifier(with_nul, "dataset");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("slid\\x00xyz"));
  EXPECT_EQ(std::string(s.message()).find('\0'), std::string::npos);
  EXPECT_EQ(ValidateIdentifier("slid\n", "dataset").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateIdentifier("slid\x7f", "dataset").code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidationTest, EmptyNameIsRequiredNamingTheField) {
  absl::Status s = ValidateIdentifier("", "dataset");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("dataset is required"));
  s = ValidateAnalystName("", "analyst");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("analyst is required"));
}

TEST(ValidationTest, AnalystNamesAllowDotAndDashButNotControlCharacters) {
  EXPECT_TRUE(ValidateAnalystName("jane.doe-2", "analyst").ok());
  for (const char* bad : {"Jane", "-x", "jane doe", "jane\tdoe", "jane/doe"}) {
    EXPECT_EQ(ValidateAnalystName(bad, "analyst").code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ValidateAnalystName(std::string("jane\0", 5), "analyst").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ValidationTest, QuoteForMessageEscapesAndCapsTheValue) {
  EXPECT_EQ(QuoteForMessage("rdp"), "\"rdp\"");
  EXPECT_EQ(QuoteForMessage(std::string("sl\0id\n", 6)), "\"sl\\x00id\\n\"");
  const std::string huge(1 << 20, 'x');
  EXPECT_EQ(QuoteForMessage(huge), "\"" + std::string(64, 'x') + "...\"");
}

TEST(ValidationTest, RequestIdsArePrintableAsciiUpTo128Characters) {
  EXPECT_TRUE(ValidateRequestId("").ok());
  EXPECT_TRUE(ValidateRequestId("run-7_report:3").ok());
  EXPECT_TRUE(ValidateRequestId(std::string(128, 'a')).ok());
  EXPECT_THAT(ValidateRequestId(std::string(129, 'a')).message(), HasSubstr("at most 128"));
  for (const std::string& bad : {std::string("a b"), std::string("a\tb"), std::string("a\0b", 3),
                                 std::string("caf\xc3\xa9")}) {
    EXPECT_EQ(ValidateRequestId(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace dpq
