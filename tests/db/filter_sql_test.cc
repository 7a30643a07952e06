// Rendered `--where` filters (server/store/filter) run on a real PostgreSQL and select exactly the
// rows that hand-written SQL selects, NULLs and three-valued logic included. Parameters are bound the
// way the store binds them: as untyped text, typed by the casts in the rendered SQL (here through
// PREPARE/EXECUTE with the values as quoted literals, since tests do not link libpqxx).
#include "server/store/filter/filter_sql.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/filter/type_checker.h"
#include "tests/support/cluster_suite.h"
#include "tests/support/status_matchers.h"
#include "tests/support/test_postgres.h"

namespace dpq::store {
namespace {

using ::dpq::testing::TestPostgres;
using query::ColumnType;
using query::DatasetSchema;

DatasetSchema TestSchema() {
  DatasetSchema s;
  s.name = "people";
  s.privacy_unit = "person_id";
  s.columns = {
      {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
      {"age", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
      {"wage", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
      {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
      {"name", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
  };
  return s;
}

// Same column types as DatasetStore gives a dataset table (bigint, double precision, text).
constexpr char kCreateTable[] = R"sql(
CREATE TABLE people (person_id bigint, age bigint, wage double precision, sex text, name text);
INSERT INTO people VALUES
  (1, 25, 10.5, 'F', 'ann'),
  (2, 30, 20.0, 'M', 'bob'),
  (3, 31, NULL, 'F', 'x'' OR ''1''=''1'),
  (4, NULL, 0.1, NULL, 'Zoë'),
  (5, 45, 0.30000000000000004, 'M', NULL),
  (6, 29, -3.25, 'X', ''),
  (9007199254740993, 60, 1e300, 'F', 'big'),
  (-9223372036854775808, 0, -0.0, 'M', 'min'),
  (7, 30, 1e-310, 'F', 'a\b');
)sql";

std::string QuoteIdent(const std::string& name) {
  return absl::StrCat("\"", absl::StrReplaceAll(name, {{"\"", "\"\""}}), "\"");
}
std::string QuoteLiteral(const std::string& value) {  // standard_conforming_strings is on
  return absl::StrCat("'", absl::StrReplaceAll(value, {{"'", "''"}}), "'");
}

struct Case {
  std::string filter;
  std::string where;  // hand-written SQL selecting the same rows
};

// One test over the whole table: ctest runs each discovered test in its own process, and each
// process starts its own cluster (~1.5 s), so a parameterised test would cost a cluster per case.
class FilterSqlDbTest : public ::dpq::testing::ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    ClusterSuite::SetUpTestSuite();
    if (pg_ == nullptr) return;
    auto created = pg_->Query(kCreateTable);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  // Runs c.filter rendered and c.where hand-written; both must list the same person_ids.
  void CheckCase(const Case& c);
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      Case{"age > 30", "age > 30"},
      Case{"age >= 30 AND age < 45", "age >= 30 AND age < 45"},
      Case{"age != 30", "age <> 30"},
      Case{"age > 29.5", "age >= 30"},
      Case{"age = 30.0", "age = 30"},
      Case{"age = 30.5", "false"},
      Case{"age < 1e30", "age IS NOT NULL"},
      Case{"age BETWEEN 25 AND 30", "age >= 25 AND age <= 30"},
      Case{"age BETWEEN 30 AND 25", "false"},
      Case{"age NOT BETWEEN 25 AND 30", "age < 25 OR age > 30"},
      Case{"age IN (25, 45, 99)", "age = 25 OR age = 45"},
      Case{"age NOT IN (25, 45)", "age IS NOT NULL AND age <> 25 AND age <> 45"},
      Case{"age IS NULL", "age IS NULL"},
      Case{"age IS NOT NULL", "age IS NOT NULL"},
      // Three-valued logic: rows with a NULL age pass neither a comparison nor its negation.
      Case{"NOT age > 30", "age <= 30"},
      Case{"NOT (age > 30 OR sex = 'F')", "age <= 30 AND sex <> 'F'"},
      Case{"NOT NOT age > 30", "age > 30"},
      Case{"age > 30 OR age IS NULL", "age > 30 OR age IS NULL"},
      Case{"NOT (age > 30 AND wage IS NOT NULL)", "age <= 30 OR wage IS NULL"},
      // Exact comparisons beyond 2^53 (a double would round 9007199254740993 to ...992).
      Case{"person_id > 9007199254740992", "person_id = 9007199254740993"},
      Case{"person_id > 9007199254740992.5", "person_id = 9007199254740993"},
      Case{"person_id = 9007199254740993", "person_id = 9007199254740993"},
      Case{"person_id < -9223372036854775807", "person_id = -9223372036854775808"},
      Case{"person_id <= -9223372036854775808", "person_id = -9223372036854775808"},
      Case{"person_id < 9223372036854775808", "true"},
      Case{"person_id > -9223372036854775809", "true"},
      // Doubles.
      Case{"wage > 10", "wage > 10"},
      Case{"wage = 0.1", "wage = 0.1::float8"},
      Case{"wage = 0.30000000000000004", "person_id = 5"},
      Case{"wage > 0.3", "wage > 0.3::float8"},
      Case{"wage = 0", "person_id = -9223372036854775808"},
      Case{"wage = -0.0", "wage = 0"},
      Case{"wage > 0 AND wage < 1e-300", "person_id = 7"},
      Case{"wage >= 1e300", "person_id = 9007199254740993"},
      Case{"wage BETWEEN -3.25 AND .1", "wage >= -3.25 AND wage <= 0.1::float8"},
      // Text, quotes and the characters that matter in SQL, all inside one bound value.
      Case{"sex = 'F'", "sex = 'F'"},
      Case{"sex IN ('F', 'X')", "sex = 'F' OR sex = 'X'"},
      Case{"sex NOT IN ('F')", "sex <> 'F'"},
      Case{"name = 'x'' OR ''1''=''1'", "person_id = 3"},
      Case{"name = 'Zoë'", "person_id = 4"},
      Case{"name = ''", "person_id = 6"},
      Case{"name = 'a\\b'", "person_id = 7"},
      Case{"name = 'ann' OR name = '; DROP TABLE people; --'", "person_id = 1"},
      Case{"name IS NULL OR sex IS NULL", "person_id IN (4, 5)"},
  };
  return *cases;
}

void FilterSqlDbTest::CheckCase(const Case& c) {
  ASSERT_OK_AND_ASSIGN(query::filter::TypedFilter typed,
                       query::filter::ParseAndCheckFilter(c.filter, TestSchema()));
  ASSERT_OK_AND_ASSIGN(SqlFragment fragment, RenderFilter(typed, 1, QuoteIdent));
  std::vector<std::string> args;
  for (const std::string& p : fragment.params) args.push_back(QuoteLiteral(p));
  const std::string rendered = absl::StrCat(
      "PREPARE q AS SELECT coalesce(string_agg(person_id::text, ',' ORDER BY person_id), '') FROM people "
      "WHERE ",
      fragment.sql, "; EXECUTE q",
      args.empty() ? "" : absl::StrCat("(", absl::StrJoin(args, ", "), ")"), "; DEALLOCATE q;");
  const std::string expected = absl::StrCat(
      "SELECT coalesce(string_agg(person_id::text, ',' ORDER BY person_id), '') FROM people WHERE ",
      c.where);
  ASSERT_OK_AND_ASSIGN(std::string got, pg_->Query(rendered));
  ASSERT_OK_AND_ASSIGN(std::string want, pg_->Query(expected));
  EXPECT_EQ(got, want) << fragment.sql;
}

TEST_F(FilterSqlDbTest, SelectsTheSameRowsAsHandWrittenSql) {
  ASSERT_NE(pg_, nullptr);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.filter);
    CheckCase(c);
  }
}

}  // namespace
}  // namespace dpq::store
