#include "server/sql/join_resolution.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/planner.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"

namespace dpq::sql {
namespace {

using query::ColumnType;
using query::DatasetSchema;
using ::testing::HasSubstr;

DatasetSchema Table(int64_t id, const std::string& name, const std::string& unit,
                    std::vector<query::ColumnSchema> columns, int64_t population = 1) {
  DatasetSchema s;
  s.id = id;
  s.name = name;
  s.privacy_unit = unit;
  s.population_id = unit.empty() ? 0 : population;
  s.population = unit.empty() ? "" : absl::StrCat("pop", population);
  s.is_public = unit.empty();
  s.has_row_rank = !unit.empty();
  s.columns = std::move(columns);
  return s;
}

DatasetSchema Patients(int64_t population = 1) {
  return Table(1, "patients", "patient_id",
               {{"patient_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                {"age", ColumnType::kInteger, 0.0, 120.0, {}},
                {"region", ColumnType::kText, absl::nullopt, absl::nullopt, {}}},
               population);
}
DatasetSchema Visits(int64_t population = 1) {
  return Table(2, "visits", "patient_id",
               {{"patient_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                {"n", ColumnType::kDouble, 0.0, 10.0, {}},
                {"region", ColumnType::kText, absl::nullopt, absl::nullopt, {}}},
               population);
}
DatasetSchema Regions() {
  return Table(3, "regions", "",
               {{"code", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
                {"income", ColumnType::kDouble, 0.0, 1000.0, {}}});
}
DatasetSchema Labs() {
  return Table(4, "labs", "pid",
               {{"pid", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
                {"value", ColumnType::kDouble, 0.0, 5.0, {}}});
}

const std::vector<DatasetSchema>& Catalog() {
  static const auto* kAll = new std::vector<DatasetSchema>{Patients(), Visits(), Regions(), Labs()};
  return *kAll;
}

absl::StatusOr<std::vector<DatasetSchema>> SchemasOf(const Statement& s,
                                                     const std::vector<DatasetSchema>& catalog) {
  std::vector<DatasetSchema> out;
  const std::shared_ptr<query::JoinRequest> request = JoinTablesOf(s);
  for (const query::JoinRequest::Table& t : request->tables) {
    for (const DatasetSchema& d : catalog) {
      if (d.name == t.dataset) out.push_back(d);
    }
  }
  return out;
}

absl::StatusOr<CompiledStatement> Compile(const std::string& sql,
                                          const std::vector<DatasetSchema>& catalog = Catalog()) {
  absl::StatusOr<Script> script = Parse(sql);
  if (!script.ok()) return script.status();
  const Statement& s = script->statements[0];
  std::vector<DatasetSchema> tables = *SchemasOf(s, catalog);
  absl::StatusOr<ResolvedJoin> r = ResolveJoin(s, tables);
  if (!r.ok()) return r.status();
  absl::StatusOr<CompiledStatement> c = AnalyzeJoin(*r);
  if (!c.ok()) return c.status();
  for (query::QuerySpec& spec : c->parts) {
    spec.join = r->request;
    // Every part plans against the joined schema as the engine will plan it.
    absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(spec, r->schema);
    if (!plan.ok()) return r->schema.join->WithWrittenNames(plan.status());
  }
  return c;
}

std::string Refusal(const std::string& sql, const std::vector<DatasetSchema>& catalog = Catalog()) {
  absl::StatusOr<CompiledStatement> c = Compile(sql, catalog);
  EXPECT_FALSE(c.ok()) << sql;
  return std::string(c.status().message());
}

#define DP "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) "

TEST(SqlJoinTest, UsingOnUnitsCompilesOntoTheJoinedSchema) {
  absl::StatusOr<CompiledStatement> c =
      Compile(DP "AVG(v.n) FROM patients p JOIN visits v USING (patient_id) WHERE p.age > 60");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->parts.size(), 1u);
  EXPECT_EQ(c->parts[0].column, "v__n");
  EXPECT_EQ(c->parts[0].dataset, "patients");
  EXPECT_EQ(c->parts[0].where, "p__age > 60");
}

TEST(SqlJoinTest, JoinedSchemaCarriesPopulationUnitAndNoRowRank) {
  absl::StatusOr<Script> script =
      Parse(DP "COUNT(*) FROM patients AS p INNER JOIN visits AS v ON p.patient_id = v.patient_id");
  ASSERT_TRUE(script.ok()) << script.status();
  std::vector<DatasetSchema> tables = {Patients(), Visits()};
  absl::StatusOr<ResolvedJoin> r = ResolveJoin(script->statements[0], tables);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->schema.privacy_unit, "p__patient_id");
  EXPECT_EQ(r->schema.population_id, 1);
  EXPECT_EQ(r->schema.id, 1);
  EXPECT_FALSE(r->schema.has_row_rank);
  ASSERT_NE(r->schema.join, nullptr);
  EXPECT_EQ(r->schema.join->tables.size(), 2u);
  // visits' unit is the same column as patients': not a second column.
  EXPECT_EQ(r->schema.FindColumn("v__patient_id"), nullptr);
  ASSERT_NE(r->schema.FindColumn("v__n"), nullptr);
  EXPECT_EQ(*r->schema.FindColumn("v__n")->upper, 10.0);
}

TEST(SqlJoinTest, ThreeTablesAndAPublicTableOnAnyKey) {
  absl::StatusOr<CompiledStatement> c = Compile(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "
      "r.code, SUM(r.income) FROM patients p JOIN visits v ON p.patient_id = v.patient_id "
      "JOIN labs l ON v.patient_id = l.pid JOIN regions r ON v.region = r.code GROUP BY r.code");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->group_by, std::vector<std::string>{"r__code"});
  EXPECT_EQ(c->columns[0].name, "code");
}

TEST(SqlJoinTest, UnqualifiedNamesResolveWhenUnique) {
  absl::StatusOr<CompiledStatement> c =
      Compile(DP "SUM(n), AVG(income) FROM visits JOIN regions ON region = code");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->parts[0].column, "visits__n");
  // The USING column and every private unit are one column.
  EXPECT_TRUE(
      Compile(DP "COUNT(DISTINCT patient_id) FROM patients JOIN visits USING (patient_id)").ok());
}

// ORDER BY acts on the released rows: an output's name, or the table column it outputs
// (qualified or not), sorts by that output; a column not in the output is still refused.
TEST(SqlJoinTest, OrderByNamesAnOutputColumnAsWrittenOrByItsTableColumn) {
  const std::string select =
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) p.age, v.region AS "
      "place, COUNT(*) AS n FROM patients p JOIN visits v USING (patient_id) GROUP BY p.age, "
      "v.region ";
  for (const auto& [order, column] :
       std::vector<std::pair<std::string, int>>{{"ORDER BY age", 0},
                                                {"ORDER BY p.age", 0},
                                                {"ORDER BY v.region", 1},
                                                {"ORDER BY place DESC", 1},
                                                {"ORDER BY n", 2},
                                                {"ORDER BY 3", 2}}) {
    absl::StatusOr<CompiledStatement> c = Compile(select + order);
    ASSERT_TRUE(c.ok()) << order << ": " << c.status();
    ASSERT_EQ(c->order_by.size(), 1u) << order;
    EXPECT_EQ(c->order_by[0].column, column) << order;
  }
  EXPECT_THAT(Refusal(select + "ORDER BY v.n"), HasSubstr("ORDER BY names an output column"));
}

TEST(SqlJoinTest, AmbiguousAndUnknownReferencesNameTheChoices) {
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits v USING (patient_id) "
                         "GROUP BY region"),
              HasSubstr("column region is ambiguous: write p.region or v.region"));
  EXPECT_THAT(Refusal(DP "SUM(x.n) FROM patients p JOIN visits v USING (patient_id)"),
              HasSubstr("unknown table x: FROM names p, v"));
  EXPECT_THAT(Refusal(DP "SUM(p.n) FROM patients p JOIN visits v USING (patient_id)"),
              HasSubstr("column n does not exist in dataset patients"));
  EXPECT_THAT(
      Refusal(DP "COUNT(*) FROM patients p JOIN visits v USING (patient_id) GROUP BY region"),
      HasSubstr("sql: line 1, column"));
}

TEST(SqlJoinTest, RefusalsNameColumnsAsTheStatementWritesThem) {
  const std::vector<std::string> refused = {
      DP "SUM(p.region) FROM patients p JOIN visits v USING (patient_id)",
      DP "p.region, COUNT(*) FROM patients p JOIN visits v USING (patient_id) GROUP BY v.region",
      DP "SUM(p.age) FROM patients p JOIN visits v USING (patient_id) WHERE v.nope > 1",
  };
  for (const std::string& sql : refused) {
    const std::string message = Refusal(sql);
    EXPECT_THAT(message, ::testing::Not(HasSubstr("__"))) << sql << ": " << message;
  }
  EXPECT_THAT(Refusal(refused[0]), HasSubstr("p.region"));
}

TEST(SqlJoinTest, WrittenNamesReplaceWholeJoinedIdentifiersOnly) {
  absl::StatusOr<Script> script =
      Parse(DP "COUNT(*) FROM patients p JOIN regions r ON p.region = r.code");
  ASSERT_TRUE(script.ok()) << script.status();
  std::vector<DatasetSchema> tables = {Patients(), Regions()};
  absl::StatusOr<ResolvedJoin> r = ResolveJoin(script->statements[0], tables);
  ASSERT_TRUE(r.ok()) << r.status();
  const query::JoinSource& join = *r->schema.join;
  EXPECT_EQ(join.WrittenNames("GROUP BY r__code: (p__age, p__age2) p__age"),
            "GROUP BY r.code: (p.age, p__age2) p.age");
  const absl::Status mapped =
      join.WithWrittenNames(absl::UnimplementedError("column r__income has no keys"));
  EXPECT_EQ(mapped.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(mapped.message(), "column r.income has no keys");
  EXPECT_TRUE(join.WithWrittenNames(absl::OkStatus()).ok());
}

TEST(SqlJoinTest, PrivateTablesJoinOnlyOnTheirUnits) {
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits v ON p.region = v.region"),
              HasSubstr("a join of private datasets must be on their privacy units"));
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits v USING (region)"),
              HasSubstr("joining on region would pair rows of different people"));
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits v "
                         "ON p.patient_id = v.patient_id AND p.age = 3"),
              HasSubstr("one equality of two columns"));
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits v USING (patient_id, region)"),
              HasSubstr("USING names one column"));
}

TEST(SqlJoinTest, PrivateTablesNeverJoinThroughAPublicTable) {
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN regions r ON p.region = r.code "
                         "JOIN visits v ON r.code = v.region"),
              HasSubstr("must join another private dataset on their privacy units"));
  // The first private table may follow a public one.
  EXPECT_TRUE(Compile(DP "COUNT(*) FROM regions r JOIN visits v ON r.code = v.region").ok());
}

TEST(SqlJoinTest, UnitAndKeyTypesMustMatch) {
  std::vector<DatasetSchema> catalog = Catalog();
  catalog[3].columns[0].type = ColumnType::kText;  // labs.pid
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN labs l ON p.patient_id = l.pid", catalog),
              HasSubstr("have different types"));
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN regions r ON p.age = r.code"),
              HasSubstr("join keys patients.age (integer) and regions.code (text)"));
}

TEST(SqlJoinTest, OnePopulationPerQuery) {
  std::vector<DatasetSchema> catalog = {Patients(1), Visits(2), Regions(), Labs()};
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients JOIN visits USING (patient_id)", catalog),
              HasSubstr("belong to populations pop1 and pop2; a query may read one population"));
}

TEST(SqlJoinTest, PublicTablesAloneAreRefused) {
  DatasetSchema other = Regions();
  other.name = "codes";
  std::vector<DatasetSchema> catalog = {Regions(), other};
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM regions r JOIN codes c ON r.code = c.code", catalog),
              HasSubstr("a public table is only ever joined"));
}

TEST(SqlJoinTest, OtherJoinFormsAreRefusedByTheParser) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {DP "COUNT(*) FROM patients p LEFT JOIN visits v USING (patient_id)", "outer joins"},
      {DP "COUNT(*) FROM patients p FULL OUTER JOIN visits v USING (patient_id)", "outer joins"},
      {DP "COUNT(*) FROM patients p CROSS JOIN visits v", "CROSS JOIN is not supported"},
      {DP "COUNT(*) FROM patients NATURAL JOIN visits", "NATURAL JOIN is not supported"},
      {DP "COUNT(*) FROM patients p, visits v", "a comma join is not supported"},
      {DP "COUNT(*) FROM patients p JOIN visits v", "a JOIN needs USING (column) or ON"},
      {DP "COUNT(*) FROM patients p JOIN (SELECT 1) v ON 1 = 1", "subqueries are not supported"},
  };
  for (const auto& [sql, want] : cases) {
    absl::StatusOr<Script> s = Parse(sql);
    ASSERT_FALSE(s.ok()) << sql;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kUnimplemented) << sql;
    EXPECT_THAT(s.status().message(), HasSubstr(want)) << sql;
  }
}

TEST(SqlJoinTest, DuplicatedAliasesAreRefused) {
  EXPECT_THAT(Refusal(DP "COUNT(*) FROM patients p JOIN visits p USING (patient_id)"),
              HasSubstr("is used twice"));
}

}  // namespace
}  // namespace dpq::sql
