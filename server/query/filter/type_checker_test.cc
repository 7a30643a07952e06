#include "server/query/filter/type_checker.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dpq::query::filter {
namespace {

using ::testing::HasSubstr;

DatasetSchema TestSchema() {
  DatasetSchema s;
  s.name = "people";
  s.privacy_unit = "person_id";
  s.columns = {
      {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
      {"age", ColumnType::kInteger, 0.0, 120.0, {}},
      {"wage", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
      {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

std::string Canonical(absl::string_view text) {
  absl::StatusOr<TypedFilter> f = ParseAndCheckFilter(text, TestSchema());
  EXPECT_TRUE(f.ok()) << text << ": " << f.status();
  return f.ok() ? CanonicalText(*f) : "";
}

std::string ErrorOf(absl::string_view text) {
  absl::StatusOr<TypedFilter> f = ParseAndCheckFilter(text, TestSchema());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(f.status().message());
}

TypedValue ValueOf(absl::string_view text) {
  absl::StatusOr<TypedFilter> f = ParseAndCheckFilter(text, TestSchema());
  EXPECT_TRUE(f.ok()) << text << ": " << f.status();
  if (!f.ok() || f->root.values.empty()) return {};
  return f->root.values[0];
}

TEST(FilterTypeCheckerTest, IntegerColumnTakesInt64OrExactDecimal) {
  EXPECT_EQ(ValueOf("age = 30").kind, TypedValue::Kind::kInteger);
  EXPECT_EQ(ValueOf("age = +30").text, "30");
  EXPECT_EQ(ValueOf("age = 3.0e1").text, "30");
  EXPECT_EQ(ValueOf("age = 3.0e1").kind, TypedValue::Kind::kInteger);
  EXPECT_EQ(ValueOf("age = -0").text, "0");
  EXPECT_EQ(ValueOf("age = 0.000e5").text, "0");
  EXPECT_EQ(ValueOf("age > 29.50").kind, TypedValue::Kind::kDecimal);
  EXPECT_EQ(ValueOf("age > 29.50").text, "295e-1");
  EXPECT_EQ(ValueOf("age > -.0050").text, "-5e-3");
  EXPECT_EQ(ValueOf("age < 9223372036854775807").kind, TypedValue::Kind::kInteger);
  EXPECT_EQ(ValueOf("age < -9223372036854775808").text, "-9223372036854775808");
  EXPECT_EQ(ValueOf("age < 9223372036854775808").kind, TypedValue::Kind::kDecimal);
  EXPECT_EQ(ValueOf("age < 9223372036854775808").text, "9223372036854775808");
  EXPECT_EQ(ValueOf("age < 1e300").text, "1e300");  // beyond the double range: refused (below)
  EXPECT_EQ(ValueOf("age < 1e19").text, "1e19");
}

TEST(FilterTypeCheckerTest, DoubleColumnTakesFiniteDoubles) {
  EXPECT_EQ(ValueOf("wage > 10").kind, TypedValue::Kind::kDouble);
  EXPECT_EQ(ValueOf("wage > 10").text, "10");
  EXPECT_EQ(ValueOf("wage > 0.1").text, "0.10000000000000001");
  EXPECT_EQ(ValueOf("wage > -0.0").text, "0");
  EXPECT_EQ(ValueOf("wage > 0e-400").text, "0");
  EXPECT_EQ(ValueOf("wage > 1e-310").text, "9.9999999999999694e-311");  // subnormal, kept
  EXPECT_EQ(ValueOf("wage > 1.5e300").text, "1.5000000000000001e+300");
}

TEST(FilterTypeCheckerTest, TextColumnTakesStrings) {
  TypedValue v = ValueOf("sex = 'it''s'");
  EXPECT_EQ(v.kind, TypedValue::Kind::kText);
  EXPECT_EQ(v.text, "it's");
}

TEST(FilterTypeCheckerTest, CountsValues) {
  absl::StatusOr<TypedFilter> f =
      ParseAndCheckFilter("age IN (1, 2, 3) AND wage BETWEEN 1 AND 2 OR sex IS NULL", TestSchema());
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->value_count, 5);
}

TEST(FilterTypeCheckerTest, CanonicalTextIgnoresSpelling) {
  EXPECT_EQ(Canonical("age>30 and ((sex in ('F','M')))"), "((age > 30) AND (sex IN ('F', 'M')))");
  EXPECT_EQ(Canonical("age <> 1.50"), Canonical("age   !=   15E-1"));
  EXPECT_EQ(Canonical("NOT sex = 'o''k' OR wage IS NOT NULL"),
            "((NOT (sex = 'o''k')) OR (wage IS NOT NULL))");
  EXPECT_EQ(Canonical("age not between 1 and 2"), "(age NOT BETWEEN 1 AND 2)");
}

TEST(FilterTypeCheckerTest, RefusesUnknownColumnsAndTypeMismatches) {
  EXPECT_EQ(ErrorOf("age > 1 AND agee < 3"), "where: at position 13: unknown column 'agee'");
  EXPECT_THAT(ErrorOf("age = 'x'"),
              HasSubstr("at position 7: column age is integer: compare it with a number"));
  EXPECT_THAT(ErrorOf("sex > 3"),
              HasSubstr("at position 7: column sex is text: compare it with a string"));
  EXPECT_THAT(ErrorOf("wage IN (1, 2, 'x')"), HasSubstr("at position 16: column wage is double"));
  EXPECT_THAT(ErrorOf("sex BETWEEN 'a' AND 3"), HasSubstr("at position 21: column sex is text"));
  EXPECT_THAT(ErrorOf("wage > 1e309"), HasSubstr("at position 8: number '1e309' is out of range"));
  EXPECT_THAT(ErrorOf("wage > 1e-400"),
              HasSubstr("at position 8: number '1e-400' is out of range"));
  EXPECT_THAT(ErrorOf("age > 1e1001"), HasSubstr("at position 7: number '1e1001' is out of range"));
  EXPECT_THAT(ErrorOf("age > 1e-1001"), HasSubstr("out of range"));
}

// Regression: an integer column compared with a number beyond the double range was accepted (and
// the query charged); every client would read that literal as infinity.
TEST(FilterTypeCheckerTest, RefusesIntegerComparisonsBeyondTheDoubleRange) {
  EXPECT_THAT(ErrorOf("age > 1e999"), HasSubstr("at position 7: number '1e999' is out of range"));
  EXPECT_THAT(ErrorOf("age > -2e308"), HasSubstr("out of range"));
  EXPECT_THAT(ErrorOf("age IN (1, 1e400)"), HasSubstr("out of range"));
  EXPECT_EQ(Canonical("age > 1e300"), Canonical("age > 1E+300"));  // finite: accepted, exact
}

// Found by tests/fuzz/filter_fuzz: a 99-character decimal compared with an integer column was
// accepted, but its canonical text "-1444...4572e-97" (102 characters) was refused by the parser,
// so the canonical text of an accepted filter did not parse again.
TEST(FilterTypeCheckerTest, RefusesDecimalsWhoseCanonicalTextExceedsTheNumberLimit) {
  // 99 characters as written, 97 significant digits: canonical "-1444...4572e-97" has 102.
  const std::string too_long = "-.1" + std::string(93, '4') + "572";
  EXPECT_THAT(ErrorOf("age > " + too_long), HasSubstr("at position 7: number '-.1444"));
  EXPECT_THAT(ErrorOf("age > " + too_long), HasSubstr("has too many significant digits"));
  // 91 significant digits: canonical "-444...41e-91" has 96 characters, and parses again.
  const std::string canonical = Canonical("age > -." + std::string(90, '4') + "1");
  EXPECT_EQ(Canonical(canonical), canonical);
}

}  // namespace
}  // namespace dpq::query::filter
