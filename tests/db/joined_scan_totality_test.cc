// Scans are total for joins too (docs/threat-model.md "Joins" and "Scans are total";
// docs/decisions.md "Joins in DP SQL"): the SQL forms of scan_totality_test.cc read FROM a
// three-way join instead of the adversarial dataset alone, compiled by the real parser, join
// resolution and analyzer, and scanned on real PostgreSQL over adversarial values in every table.
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/sql/join_resolution.h"
#include "tests/db/scan_totality.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::AdversarialBounds;
using ::dpq::testing::Bounds;
using query::ColumnSchema;
using query::ColumnType;
using query::QuerySpec;
using totality::ScanTotalityTest;
using totality::SqlExpressionForms;
using totality::SqlFormsFor;

// Joined scans (docs/decisions.md "Joins in DP SQL"): a second private table of the adversarial
// population (adversarial_b: pid, y, m, bcat: every unit's first two adversarial rows, so the
// unit of thousands of rows joins 2 of its own) and a public table (adversarial_public: code, z, pk:
// every adversarial double and integer, NULL and text keys included). Each SQL form above is
// rewritten to read FROM the three-way join with its value and integer columns taken from each
// table in turn, compiled by the real parser, join resolution and analyzer, and scanned, on one
// bounds pair per kind of magnitude (tiny, huge, ordinary: the join adds no arithmetic, only rows).
class JoinedScanTotalityTest : public ScanTotalityTest {
 protected:
  void SetUp() override {
    ScanTotalityTest::SetUp();
    if (HasFatalFailure()) return;
    query::DatasetSchema b;
    b.name = "adversarial_b";
    b.population = schema_.population;
    b.privacy_unit = "pid";
    b.columns = {{"pid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                 {"y", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
                 {"m", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                 {"bcat", ColumnType::kText, absl::nullopt, absl::nullopt, {"a", "b", "c"}}};
    ASSERT_OK_AND_ASSIGN(CreatedDataset created_b, CreateFromCsv(b, "pid,y,m,bcat\n1,1,1,a\n"));
    ASSERT_EQ(created_b.schema.population_id, schema_.population_id);
    query::DatasetSchema pub;
    pub.name = "adversarial_public";
    pub.is_public = true;
    pub.columns = {{"code", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
                   {"z", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
                   {"pk", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}}};
    ASSERT_OK_AND_ASSIGN(CreatedDataset created_pub, CreateFromCsv(pub, "code,z,pk\ng0,1,1\n"));
    Sql(absl::StrCat("INSERT INTO ", DataTableName(created_b.schema.id),
                     " (pid, y, m, bcat, _dpq_rank) SELECT pid, x, n, cat, _dpq_rank FROM ",
                     DataTableName(schema_.id), " WHERE _dpq_rank <= 2"));
    const auto& xs = ::dpq::testing::AdversarialDoubles();
    const auto& ns = ::dpq::testing::AdversarialIntegers();
    const std::vector<std::string> codes = {"'g0'", "'g1'", "''", "NULL", "'zz'", "'g2'"};
    std::vector<std::string> rows;
    for (size_t i = 0; i < xs.size(); ++i) {
      const std::string z = xs[i] == "NULL" ? "NULL" : absl::StrCat("'", xs[i], "'::float8");
      rows.push_back(
          absl::StrCat("(", codes[i % codes.size()], ", ", z, ", ", ns[i % ns.size()], ")"));
    }
    Sql(absl::StrCat("INSERT INTO ", DataTableName(created_pub.schema.id), " (code, z, pk) VALUES ",
                     absl::StrJoin(rows, ", ")));
    DatasetStore datasets(db());
    for (const char* name : {"adversarial", "adversarial_b", "adversarial_public"}) {
      ASSERT_OK_AND_ASSIGN(tables_[name], datasets.Get(name));
    }
  }

  // `text` (a form over `adversarial`) over the three-way join, with x and n renamed to `x_as`
  // and `n_as` (whole words only).
  static std::string Joined(const std::string& text, const std::string& x_as,
                            const std::string& n_as) {
    std::string out = absl::StrReplaceAll(
        text, {{" FROM adversarial",
                " FROM adversarial JOIN adversarial_b USING (pid) JOIN adversarial_public "
                "ON adversarial.grp = adversarial_public.code"}});
    std::string renamed;
    size_t i = 0;
    const auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    while (i < out.size()) {
      size_t end = i;
      while (end < out.size() && word(out[end])) ++end;
      if (end == i) {
        renamed.push_back(out[i++]);
        continue;
      }
      const std::string w = out.substr(i, end - i);
      renamed += w == "x" ? x_as : w == "n" ? n_as : w;
      i = end;
    }
    return renamed;
  }

  // Compiles a joined `text` against `tables_` as the engine does (query bounds: `declare` may
  // set declared bounds on the stored schemas first); the joined schema goes to `joined`.
  absl::optional<sql::CompiledStatement> CompileJoined(
      const std::string& text, query::DatasetSchema* joined,
      const std::function<void(std::map<std::string, query::DatasetSchema>&)>& declare = nullptr) {
    absl::StatusOr<sql::Script> script = sql::Parse(text);
    EXPECT_TRUE(script.ok()) << text << ": " << script.status();
    if (!script.ok()) return absl::nullopt;
    const sql::Statement& statement = script->statements[0];
    std::shared_ptr<query::JoinRequest> request = sql::JoinTablesOf(statement);
    EXPECT_NE(request, nullptr) << text;
    if (request == nullptr) return absl::nullopt;
    std::map<std::string, query::DatasetSchema> stored = tables_;
    if (declare) declare(stored);
    std::vector<query::DatasetSchema> tables;
    for (const query::JoinRequest::Table& t : request->tables) tables.push_back(stored[t.dataset]);
    absl::StatusOr<sql::ResolvedJoin> resolved = sql::ResolveJoin(statement, tables);
    EXPECT_TRUE(resolved.ok()) << text << ": " << resolved.status();
    if (!resolved.ok()) return absl::nullopt;
    absl::StatusOr<sql::CompiledStatement> compiled = sql::AnalyzeJoin(*resolved);
    if (!compiled.ok()) {
      EXPECT_THAT(compiled.status().code(), ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                                             absl::StatusCode::kUnimplemented))
          << text << ": " << compiled.status();
      return absl::nullopt;
    }
    for (QuerySpec& part : compiled->parts) part.join = resolved->request;
    *joined = resolved->schema;
    return *std::move(compiled);
  }

  static const std::vector<Bounds>& SomeBounds() {
    static const auto* const kSome =
        new std::vector<Bounds>{{-1e-147, 1.0000000000000001e-147}, {-1e15, 1e15}, {1, 2.5}};
    return *kSome;
  }

  // Which table the value column is read from, by form.
  static const std::vector<std::pair<std::string, std::string>>& Renamings() {
    static const auto* const kRenamings =
        new std::vector<std::pair<std::string, std::string>>{{"x", "n"}, {"y", "m"}, {"z", "pk"}};
    return *kRenamings;
  }

  std::map<std::string, query::DatasetSchema> tables_;
};

TEST_F(JoinedScanTotalityTest, EveryJoinedSqlFormScansWithoutErrorOnAdversarialValues) {
  AggregateScanner scanner(db());
  for (const auto& [function, kind] : sql::SqlAggregateFunctions()) {
    const int scanned_before = scanned_;
    for (const Bounds& b : SomeBounds()) {
      for (const std::string& form : SqlFormsFor(function, b)) {
        for (const auto& [x_as, n_as] : Renamings()) {
          const std::string text = Joined(form, x_as, n_as);
          query::DatasetSchema joined;
          absl::optional<sql::CompiledStatement> compiled = CompileJoined(text, &joined);
          if (!compiled) continue;
          declared_ = &joined;
          for (const QuerySpec& part : compiled->parts) PlanAndScan(part, text, scanner);
          declared_ = nullptr;
        }
      }
    }
    EXPECT_GT(scanned_, scanned_before) << "no joined SQL form of " << function << " was scanned";
  }
  EXPECT_EQ(modes_.count(BoundingMode::kStoredRank), 0u) << "a joined scan used the stored rank";
  std::printf("scan_totality: %d joined SQL parts scanned\n", scanned_);
}

TEST_F(JoinedScanTotalityTest, EveryJoinedSqlExpressionFormScansWithoutError) {
  std::map<std::string, int> scanned_per_form;
  for (bool fallback : {false, true}) {
    AggregateScanner scanner(db());
    scanner.FailFloat8ScansForTesting(fallback);
    for (const Bounds& b : SomeBounds()) {
      const auto declare = [&b](std::map<std::string, query::DatasetSchema>& stored) {
        for (auto& [name, schema] : stored) {
          for (ColumnSchema& c : schema.columns) {
            if (c.type == ColumnType::kDouble) c.lower = b.lower, c.upper = b.upper;
            if (c.type == ColumnType::kInteger && c.name != "pid") c.lower = -3, c.upper = 7;
          }
        }
      };
      for (const std::string& form : SqlExpressionForms()) {
        for (const auto& [x_as, n_as] : Renamings()) {
          const std::string text = Joined(form, x_as, n_as);
          query::DatasetSchema joined;
          absl::optional<sql::CompiledStatement> compiled = CompileJoined(text, &joined, declare);
          if (!compiled) continue;
          declared_ = &joined;
          for (const QuerySpec& part : compiled->parts) {
            const std::string label = absl::StrFormat("%s [in %.17g, %.17g] fallback=%d", text,
                                                      b.lower, b.upper, fallback);
            if (PlanAndScan(part, label, scanner, fallback)) ++scanned_per_form[text];
          }
          declared_ = nullptr;
        }
      }
    }
  }
  for (const std::string& form : SqlExpressionForms()) {
    for (const auto& [x_as, n_as] : Renamings()) {
      EXPECT_GT(scanned_per_form[Joined(form, x_as, n_as)], 0)
          << "never scanned: " << Joined(form, x_as, n_as);
    }
  }
}

// Dates through a join: a private table of the same population holding only adversarial dates
// (every pair of totality::AdversarialDays and AdversarialTimestamps for every unit), joined on
// the unit; each SQL date form reads its date columns from it, clamped by its declared bounds.
TEST_F(JoinedScanTotalityTest, EveryJoinedSqlDateFormScansWithoutError) {
  query::DatasetSchema c;
  c.name = "calendar_b";
  c.population = schema_.population;
  c.privacy_unit = "pid";
  c.columns = {{"pid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
               {"day", ColumnType::kDate, absl::nullopt, absl::nullopt, {}},
               {"at", ColumnType::kTimestamp, absl::nullopt, absl::nullopt, {}}};
  c.columns[1].calendar_lower = *query::ParseDate("2026-01-01");
  c.columns[1].calendar_upper = *query::ParseDate("2026-12-31");
  c.columns[2].calendar_lower = *query::ParseTimestamp("2026-01-01T00:00:00Z");
  c.columns[2].calendar_upper = *query::ParseTimestamp("2026-06-30T23:59:59.999999Z");
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(c, "pid,day,at\n1,2026-05-05,2026-05-05T10:00:00Z\n"));
  const auto values = [](const std::vector<std::string>& v) {
    std::vector<std::string> rows;
    for (size_t i = 0; i < v.size(); ++i) rows.push_back(absl::StrCat("(", i, ", ", v[i], ")"));
    return absl::StrJoin(rows, ", ");
  };
  Sql(absl::StrCat("INSERT INTO ", DataTableName(created.schema.id),
                   " (pid, day, at, _dpq_rank) SELECT a.pid, d.v::date, t.v::timestamp, "
                   "row_number() OVER (PARTITION BY a.pid ORDER BY d.i, t.i) FROM (SELECT "
                   "DISTINCT pid FROM ",
                   DataTableName(schema_.id), ") a CROSS JOIN (VALUES ",
                   values(totality::AdversarialDays()), ") d(i, v) CROSS JOIN (VALUES ",
                   values(totality::AdversarialTimestamps()), ") t(i, v)"));
  tables_["calendar_b"] = created.schema;
  AggregateScanner scanner(db());
  for (const std::string& form : totality::SqlDateForms()) {
    const std::string text = absl::StrReplaceAll(
        form, {{" FROM calendar", " FROM adversarial JOIN calendar_b USING (pid)"}});
    query::DatasetSchema joined;
    absl::optional<sql::CompiledStatement> compiled = CompileJoined(text, &joined);
    ASSERT_TRUE(compiled.has_value()) << text;
    declared_ = &joined;
    for (const QuerySpec& part : compiled->parts) EXPECT_TRUE(PlanAndScan(part, text, scanner));
    declared_ = nullptr;
  }
  EXPECT_EQ(scanned_, static_cast<int>(totality::SqlDateForms().size()));
}

}  // namespace
}  // namespace dpq::store
