// The filter language end to end in the pure layers: text -> ParseFilter -> CheckFilter ->
// RenderFilter, as tables of accepted filters (with the exact SQL and parameters they become) and of
// refused ones (each INVALID_ARGUMENT naming the position, before any SQL exists).
#include "server/store/filter/filter_sql.h"

#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/filter/type_checker.h"

namespace dpq::store {
namespace {

using query::ColumnType;
using query::DatasetSchema;
using query::filter::ParseAndCheckFilter;
using query::filter::TypedFilter;
using ::testing::ElementsAreArray;
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
      {"name", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

// What pqxx::transaction_base::quote_name does for these names.
std::string QuoteIdent(const std::string& name) {
  return absl::StrCat("\"", absl::StrReplaceAll(name, {{"\"", "\"\""}}), "\"");
}

struct ValidCase {
  std::string filter;
  std::string sql;  // rendered with first_param = 3
  std::vector<std::string> params;
};

void PrintTo(const ValidCase& c, std::ostream* os) { *os << c.filter; }

class ValidFilterTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidFilterTest, RendersParameterisedSql) {
  const ValidCase& c = GetParam();
  absl::StatusOr<TypedFilter> typed = ParseAndCheckFilter(c.filter, TestSchema());
  ASSERT_TRUE(typed.ok()) << typed.status();
  absl::StatusOr<SqlFragment> sql = RenderFilter(*typed, 3, QuoteIdent);
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_EQ(sql->sql, c.sql);
  EXPECT_THAT(sql->params, ElementsAreArray(c.params));
  EXPECT_EQ(static_cast<int>(sql->params.size()), typed->value_count);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidFilterTest,
    ::testing::Values(
        ValidCase{"age > 30", R"(("age" > $3::bigint))", {"30"}},
        ValidCase{"age >= -5 AND age <= +65",
                  R"((("age" >= $3::bigint) AND ("age" <= $4::bigint)))",
                  {"-5", "65"}},
        ValidCase{"age != 1 OR age <> 2",
                  R"((("age" <> $3::bigint) OR ("age" <> $4::bigint)))",
                  {"1", "2"}},
        ValidCase{"age < 2", R"(("age" < $3::bigint))", {"2"}},
        ValidCase{"age = 30.0", R"(("age" = $3::bigint))", {"30"}},
        ValidCase{"age > 29.5", R"(("age" > $3::numeric))", {"295e-1"}},
        ValidCase{"age < 1e30", R"(("age" < $3::numeric))", {"1e30"}},
        ValidCase{"wage >= 12.5", R"(("wage" >= $3::float8))", {"12.5"}},
        ValidCase{"wage < 1E3", R"(("wage" < $3::float8))", {"1000"}},
        ValidCase{"sex = 'F'", R"(("sex" = $3::text))", {"F"}},
        ValidCase{"sex < 'M'", R"(("sex" < $3::text))", {"M"}},
        // Quotes stay inside the one bound value: this is a comparison with the string x' OR '1'='1.
        ValidCase{"name = 'x'' OR ''1''=''1'", R"(("name" = $3::text))", {"x' OR '1'='1"}},
        ValidCase{"name = '; DROP TABLE audit; --'",
                  R"(("name" = $3::text))",
                  {"; DROP TABLE audit; --"}},
        ValidCase{"name = '/* x */ $1 \\'", R"(("name" = $3::text))", {"/* x */ $1 \\"}},
        ValidCase{"name = ''", R"(("name" = $3::text))", {""}},
        ValidCase{"name = 'Zoë'", R"(("name" = $3::text))", {"Zoë"}},
        ValidCase{"sex IN ('F', 'M')", R"(("sex" IN ($3::text, $4::text)))", {"F", "M"}},
        ValidCase{
            "age NOT IN (1, 2.5)", R"(("age" NOT IN ($3::bigint, $4::numeric)))", {"1", "25e-1"}},
        ValidCase{"wage BETWEEN 10 AND 20.5",
                  R"(("wage" BETWEEN $3::float8 AND $4::float8))",
                  {"10", "20.5"}},
        ValidCase{"age not between 18 and 65",
                  R"(("age" NOT BETWEEN $3::bigint AND $4::bigint))",
                  {"18", "65"}},
        ValidCase{"wage IS NULL", R"(("wage" IS NULL))", {}},
        ValidCase{"wage is not null", R"(("wage" IS NOT NULL))", {}},
        ValidCase{"NOT age > 30", R"((NOT ("age" > $3::bigint)))", {"30"}},
        ValidCase{"NOT NOT age > 30", R"((NOT (NOT ("age" > $3::bigint))))", {"30"}},
        ValidCase{"age > 1 OR age < 2 AND sex = 'F'",
                  R"((("age" > $3::bigint) OR (("age" < $4::bigint) AND ("sex" = $5::text))))",
                  {"1", "2", "F"}},
        ValidCase{"(age > 1 OR age < 2) AND sex = 'F'",
                  R"(((("age" > $3::bigint) OR ("age" < $4::bigint)) AND ("sex" = $5::text)))",
                  {"1", "2", "F"}},
        ValidCase{"((((age > 1))))", R"(("age" > $3::bigint))", {"1"}},
        ValidCase{"person_id = 7 And wage Is Null",
                  R"((("person_id" = $3::bigint) AND ("wage" IS NULL)))",
                  {"7"}}));

struct InvalidCase {
  std::string filter;
  std::string message;  // a substring of the error, starting with the position
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.filter.substr(0, 60); }

class InvalidFilterTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidFilterTest, IsRefusedWithPosition) {
  const InvalidCase& c = GetParam();
  absl::StatusOr<TypedFilter> typed = ParseAndCheckFilter(c.filter, TestSchema());
  EXPECT_EQ(typed.status().code(), absl::StatusCode::kInvalidArgument) << c.filter;
  EXPECT_THAT(std::string(typed.status().message()), HasSubstr(c.message)) << c.filter;
  // Short messages: the input is never echoed beyond a brief excerpt.
  EXPECT_LE(typed.status().message().size(), 200u);
}

INSTANTIATE_TEST_SUITE_P(
    Table, InvalidFilterTest,
    ::testing::Values(
        // Injection attempts.
        InvalidCase{"1=1; DROP TABLE audit", "at position 1: expected a column name"},
        InvalidCase{"age > 1; DROP TABLE audit", "at position 8: unexpected character ';'"},
        InvalidCase{"age > 1 --", "at position 9: comments are not allowed"},
        InvalidCase{"age > 1 -- AND sex = 'F'", "at position 9: comments are not allowed"},
        InvalidCase{"age > 1 /* x */", "at position 9: comments are not allowed"},
        InvalidCase{"name = 'x' OR '1'='1'", "at position 15: expected a column name"},
        InvalidCase{"name = 'x' OR 1=1", "at position 15: expected a column name"},
        InvalidCase{"name = 'x'' OR ''1''=''1", "at position 8: unterminated string literal"},
        InvalidCase{"name = 'x'; DELETE FROM audit; --'",
                    "at position 11: unexpected character ';'"},
        InvalidCase{"age > 1) OR (1=1", "at position 8: unexpected ')'"},
        InvalidCase{"age > (SELECT 1)", "at position 7: expected a string or number, found '('"},
        InvalidCase{"age > 1 UNION SELECT 1", "at position 9: column names are lowercase"},
        InvalidCase{"age > 1 union select 1", "at position 9: unexpected 'union'"},
        InvalidCase{"\"age\" > 1", "at position 1: unexpected character '\"'"},
        InvalidCase{"age > E'\\x27'", "at position 7: column names are lowercase"},
        InvalidCase{"age > $$1$$", "at position 7: unexpected character '$'"},
        InvalidCase{"age > $1", "at position 7: unexpected character '$'"},
        InvalidCase{"name = 'a' || 'b'", "at position 12: unexpected character '|'"},
        InvalidCase{"age::text = '1'", "at position 4: unexpected character ':'"},
        InvalidCase{"pg_sleep(10) IS NULL", "at position 9: expected a comparison"},
        InvalidCase{"age > 1 AND", "at position 12: expected a column name, found end of input"},
        InvalidCase{"name = 'x\\' OR 1=1 --'", "at position 16: expected a column name"},
        // Unbalanced quotes and parentheses.
        InvalidCase{"sex = 'F", "at position 7: unterminated string literal"},
        InvalidCase{"sex = F'", "at position 7: column names are lowercase"},
        InvalidCase{"(age > 1", "at position 9: expected ')'"},
        InvalidCase{"((age > 1)", "at position 11: expected ')'"},
        InvalidCase{"age > 1)", "at position 8: unexpected ')'"},
        InvalidCase{"age IN (1, 2", "at position 13: expected ',' or ')' in the IN list"},
        // Unknown columns, comparisons the language does not have.
        InvalidCase{"salary > 1", "at position 1: unknown column 'salary'"},
        InvalidCase{"age > 1 OR nme = 'x'", "at position 12: unknown column 'nme'"},
        InvalidCase{"age = wage",
                    "at position 7: expected a string or number, found column 'wage'"},
        InvalidCase{"age = NULL", "at position 7: NULL is not a value here"},
        InvalidCase{"age", "at position 4: expected a comparison"},
        // Type mismatches.
        InvalidCase{"age = 'x'", "at position 7: column age is integer: compare it with a number"},
        InvalidCase{"age = '30'", "at position 7: column age is integer"},
        InvalidCase{"wage < 'high'", "at position 8: column wage is double"},
        InvalidCase{"sex > 3", "at position 7: column sex is text: compare it with a string"},
        InvalidCase{"sex IN ('F', 1)", "at position 14: column sex is text"},
        InvalidCase{"age BETWEEN 1 AND 'z'", "at position 19: column age is integer"},
        InvalidCase{"wage > 1e999", "at position 8: number '1e999' is out of range"},
        // Empty, too long, too deep.
        InvalidCase{"", "at position 1: empty filter"},
        InvalidCase{"   ", "at position 4: empty filter"},
        InvalidCase{"age > 1" + std::string(4090, ' '),
                    "at position 4097: filter longer than 4096 bytes"},
        InvalidCase{std::string(65, '(') + "age > 1" + std::string(65, ')'),
                    "at position 65: nested too deeply"},
        InvalidCase{"name = '" + std::string(5000, 'x') + "'", "filter longer than 4096 bytes"}));

TEST(RenderFilterTest, RefusesBadPlaceholderNumbers) {
  absl::StatusOr<TypedFilter> typed = ParseAndCheckFilter("age IN (1, 2)", TestSchema());
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(RenderFilter(*typed, 0, QuoteIdent).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(RenderFilter(*typed, 65534, QuoteIdent).ok());
  EXPECT_EQ(RenderFilter(*typed, 65535, QuoteIdent).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RenderFilterTest, NumbersPlaceholdersFromFirstParam) {
  absl::StatusOr<TypedFilter> typed =
      ParseAndCheckFilter("age IN (1, 2) OR sex = 'F'", TestSchema());
  ASSERT_TRUE(typed.ok()) << typed.status();
  absl::StatusOr<SqlFragment> sql = RenderFilter(*typed, 1, QuoteIdent);
  ASSERT_TRUE(sql.ok()) << sql.status();
  EXPECT_EQ(sql->sql, R"((("age" IN ($1::bigint, $2::bigint)) OR ("sex" = $3::text)))");
}

}  // namespace
}  // namespace dpq::store
