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
#include "server/query/calendar.h"
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
CREATE TABLE visits (person_id bigint, day date, at timestamp);
INSERT INTO visits VALUES
  (1, '2026-01-01', '2026-01-01 00:00:00'),
  (2, '2026-11-23', '2026-03-01 12:00:00.5'),
  (3, '2026-12-31', '2026-06-30 23:59:59.999999'),
  (4, NULL, NULL),
  (5, 'infinity', 'infinity'),
  (6, '-infinity', '-infinity'),
  (7, '0001-01-01', '0001-01-01 00:00:00'),
  (8, '9999-12-31', '9999-12-31 23:59:59.999999'),
  (9, '4713-01-01 BC', '4713-01-01 00:00:00 BC'),
  (10, '5874897-12-31', '294276-12-31 23:59:59.999999'),
  (11, '2026-02-28', '2026-02-28 23:59:59');
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

// Dates and timestamps, declared bounds 2026-01-01..2026-12-31 and 2026-01-01T00:00:00Z ..
// 2026-06-30T23:59:59.999999Z: compared clamped (a stored 'infinity' is the upper bound, year
// 0001 the lower), NULL stays NULL.
DatasetSchema VisitsSchema() {
  DatasetSchema s;
  s.name = "visits";
  s.privacy_unit = "person_id";
  query::ColumnSchema unit, day, at;
  unit.name = "person_id";
  unit.type = ColumnType::kInteger;
  day.name = "day";
  day.type = ColumnType::kDate;
  day.calendar_lower = *query::ParseDate("2026-01-01");
  day.calendar_upper = *query::ParseDate("2026-12-31");
  at.name = "at";
  at.type = ColumnType::kTimestamp;
  at.calendar_lower = *query::ParseTimestamp("2026-01-01T00:00:00Z");
  at.calendar_upper = *query::ParseTimestamp("2026-06-30T23:59:59.999999Z");
  s.columns = {unit, day, at};
  return s;
}

// The clamped columns, written by hand as PostgreSQL's own expressions.
constexpr char kDay[] = "least(greatest(day, date '2026-01-01'), date '2026-12-31')";
constexpr char kAt[] =
    "least(greatest(at, timestamp '2026-01-01'), timestamp '2026-06-30 23:59:59.999999')";

std::vector<Case> CalendarCases() {
  // Bare least / greatest make NULL the lower bound, so the hand-written side states that NULL
  // passes no comparison (row 4, NULL in both columns, is the only NULL).
  const auto with = [](std::string where) {
    return absl::StrCat("day IS NOT NULL AND at IS NOT NULL AND (",
                        absl::StrReplaceAll(where, {{"DAY", kDay}, {"AT", kAt}}), ")");
  };
  return {
      Case{"day >= '2026-11-23'", with("DAY >= '2026-11-23'")},
      Case{"day >= '2026-11-23'", "person_id IN (2, 3, 5, 8, 10)"},
      Case{"day = '2026-01-01'", "person_id IN (1, 6, 7, 9)"},
      Case{"day < '2026-01-02'", with("DAY < '2026-01-02'")},
      Case{"day <= '2026-02-28'", with("DAY <= '2026-02-28'")},
      Case{"day > '2026-12-30'", with("DAY > '2026-12-30'")},
      Case{"day != '2026-12-31'", with("DAY <> '2026-12-31'")},
      Case{"day IN ('2026-12-31', '2026-02-28')", "person_id IN (3, 5, 8, 10, 11)"},
      Case{"day NOT IN ('2026-12-31')", with("DAY NOT IN ('2026-12-31')")},
      Case{"day BETWEEN '2025-01-01' AND '2026-01-01'", "person_id IN (1, 6, 7, 9)"},
      Case{"day NOT BETWEEN '2026-01-02' AND '2026-12-30'",
           with("DAY NOT BETWEEN '2026-01-02' AND '2026-12-30'")},
      Case{"day IS NULL", "person_id = 4"},
      Case{"NOT day > '2026-06-01'", with("DAY <= '2026-06-01'")},
      Case{"at > '2026-06-30T23:59:59.999998Z'", "person_id IN (3, 5, 8, 10)"},
      Case{"at = '2026-03-01T12:00:00.5Z'", "person_id = 2"},
      Case{"at < '2026-01-01T00:00:00.000001Z'", "person_id IN (1, 6, 7, 9)"},
      Case{"at BETWEEN '2026-02-28T00:00:00Z' AND '2026-03-01T12:00:00Z'", "person_id = 11"},
      Case{"at != '2026-01-01T00:00:00Z' AND day IS NOT NULL",
           with("AT <> '2026-01-01' AND day IS NOT NULL")},
  };
}

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
  void CheckCase(const Case& c, const DatasetSchema& schema);
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

void FilterSqlDbTest::CheckCase(const Case& c, const DatasetSchema& schema) {
  ASSERT_OK_AND_ASSIGN(query::filter::TypedFilter typed,
                       query::filter::ParseAndCheckFilter(c.filter, schema));
  const std::string table = schema.name;
  ASSERT_OK_AND_ASSIGN(SqlFragment fragment, RenderFilter(typed, 1, QuoteIdent));
  std::vector<std::string> args;
  for (const std::string& p : fragment.params) args.push_back(QuoteLiteral(p));
  // The session's TimeZone and DateStyle must not matter: date columns are `date` and
  // `timestamp` (no time zone), and every value is bound in ISO form.
  const std::string rendered = absl::StrCat(
      "SET TimeZone = 'Pacific/Kiritimati'; SET DateStyle = 'SQL, DMY'; PREPARE q AS SELECT coalesce(string_agg(person_id::text, ',' ORDER BY person_id), '') "
      "FROM ",
      table, " WHERE ", fragment.sql, "; EXECUTE q",
      args.empty() ? "" : absl::StrCat("(", absl::StrJoin(args, ", "), ")"), "; DEALLOCATE q;");
  const std::string expected =
      absl::StrCat("SELECT coalesce(string_agg(person_id::text, ',' ORDER BY person_id), '') FROM ",
                   table, " WHERE ", c.where);
  ASSERT_OK_AND_ASSIGN(std::string got, pg_->Query(rendered));
  ASSERT_OK_AND_ASSIGN(std::string want, pg_->Query(expected));
  EXPECT_EQ(got, want) << fragment.sql;
}

TEST_F(FilterSqlDbTest, SelectsTheSameRowsAsHandWrittenSql) {
  ASSERT_NE(pg_, nullptr);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.filter);
    CheckCase(c, TestSchema());
  }
}

TEST_F(FilterSqlDbTest, DatesAreComparedClampedIntoTheirBounds) {
  ASSERT_NE(pg_, nullptr);
  for (const Case& c : CalendarCases()) {
    SCOPED_TRACE(c.filter);
    CheckCase(c, VisitsSchema());
  }
}

}  // namespace
}  // namespace dpq::store
