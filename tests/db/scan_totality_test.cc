// Scans are total: no stored value and no bounds that validation accepts can make a scan
// statement fail (docs/threat-model.md, "Scans are total"; server/store/scan_arithmetic.h).
//
// The shapes are generated from the code's own tables, not from a hand list of queries:
//  * every query::AggregateKind (kAllAggregateKinds) x every bounding request (row-clamped,
//    per-unit pre-aggregated; the store then picks the random window or the stored rank) x every
//    grouping (none, declared keys, a key list, selected keys, numeric bins, text histogram) x with
//    and without a filter x every bounds pair below; a kind with no shapes here fails the test;
//  * every SQL aggregate function the analyzer knows (sql::SqlAggregateFunctions) in each of its
//    forms and groupings (WHERE key lists, WIDTH_BUCKET, max_rows_contributed), compiled by the
//    real parser and analyzer; a function with no forms here fails the test;
//  * per-row expression statements (SqlExpressionForms: every construct of the expression
//    language, in aggregates, WHERE and GROUP BY, and key-only selects), compiled and planned for
//    real over declared bounds far narrower than the stored values.
// Each planned shape is scanned on real PostgreSQL over a table of adversarial values, and the
// test asserts that the float8 statement itself answered (no fallback), that every
// store::BoundingMode and every grouping was reached, and that the numeric fallback is total too.
// Planner or analyzer refusals are fine: they happen before the charge and depend on the request
// and the schema only.
#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/calendar.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/scan_sql.h"
#include "tests/db/adversarial_dataset.h"
#include "tests/db/scan_totality.h"
#include "tests/db/store_test_env.h"
#include "tests/support/expression_trees.h"
#include "tests/support/status_matchers.h"

namespace dpq::store {
namespace {

using ::dpq::testing::AdversarialBounds;
using ::dpq::testing::Bounds;
using query::AggregateKind;
using query::ColumnSchema;
using query::ColumnType;
using query::QuerySpec;
using totality::Compile;
using totality::ScanTotalityTest;
using totality::SqlExpressionForms;
using totality::SqlFormsFor;

using totality::FlagShapes;
using totality::Grouping;
using totality::GroupingName;
using totality::kAllGroupings;
using totality::Shape;

TEST_F(ScanTotalityTest, EveryFlagShapeScansWithoutErrorOnAdversarialValues) {
  AggregateScanner scanner(db());
  std::map<AggregateKind, int> per_kind;
  std::set<Grouping> groupings;
  const std::vector<Shape> shapes = FlagShapes();
  for (const Shape& shape : shapes) {
    if (PlanAndScan(shape.spec, shape.label, scanner)) {
      ++per_kind[shape.spec.aggregate];
      groupings.insert(shape.grouping);
    }
  }
  for (AggregateKind kind : query::kAllAggregateKinds) {
    EXPECT_GT(per_kind[kind], 0) << "no shape of " << query::AggregateName(kind) << " was scanned";
  }
  for (BoundingMode mode : kAllBoundingModes) {
    EXPECT_EQ(modes_.count(mode), 1u)
        << "bounding mode " << BoundingModeName(mode) << " never scanned";
  }
  for (Grouping g : kAllGroupings) {
    EXPECT_EQ(groupings.count(g), 1u) << "grouping " << GroupingName(g) << " never scanned";
  }
  std::printf("scan_totality: %zu flag shapes, %d planned and scanned\n", shapes.size(), scanned_);
}

TEST_F(ScanTotalityTest, EverySqlFormScansWithoutErrorOnAdversarialValues) {
  AggregateScanner scanner(db());
  std::set<query::AggregateKind> lowered;
  int statements = 0;
  for (const auto& [function, kind] : sql::SqlAggregateFunctions()) {
    int scanned_before = scanned_;
    for (const Bounds& b : AdversarialBounds()) {
      for (const std::string& text : SqlFormsFor(function, b)) {
        ++statements;
        absl::optional<sql::CompiledStatement> compiled = Compile(text, schema_);
        if (!compiled) continue;
        for (const QuerySpec& part : compiled->parts) {
          lowered.insert(part.aggregate);
          PlanAndScan(part, text, scanner);
        }
      }
    }
    EXPECT_GT(scanned_, scanned_before) << "no SQL form of " << function << " was scanned";
  }
  // Every kind the analyzer lowers to is one the flag enumeration covers.
  const std::set<query::AggregateKind> all(std::begin(query::kAllAggregateKinds),
                                           std::end(query::kAllAggregateKinds));
  for (query::AggregateKind kind : lowered)
    EXPECT_EQ(all.count(kind), 1u) << query::AggregateName(kind);
  std::printf("scan_totality: %d SQL statements, %d parts scanned\n", statements, scanned_);
}

TEST_F(ScanTotalityTest, EverySqlExpressionFormScansWithoutErrorOnAdversarialValues) {
  std::map<std::string, int> scanned_per_form;
  for (bool fallback : {false, true}) {
    AggregateScanner scanner(db());
    scanner.FailFloat8ScansForTesting(fallback);
    for (const Bounds& b : AdversarialBounds()) {
      query::DatasetSchema declared = schema_;
      declared.columns[1].lower = b.lower;
      declared.columns[1].upper = b.upper;
      declared.columns[2].lower = -3;
      declared.columns[2].upper = 7;
      declared_ = &declared;
      for (const std::string& text : SqlExpressionForms()) {
        absl::optional<sql::CompiledStatement> compiled = Compile(text, declared);
        if (!compiled) continue;
        for (const QuerySpec& part : compiled->parts) {
          const std::string label = absl::StrFormat("%s [x in %.17g, %.17g] fallback=%d", text,
                                                    b.lower, b.upper, fallback);
          if (PlanAndScan(part, label, scanner, fallback)) ++scanned_per_form[text];
        }
      }
      declared_ = nullptr;
    }
  }
  // Every form is answered for some bounds (a form refused everywhere would test nothing).
  for (const std::string& text : SqlExpressionForms()) {
    EXPECT_GT(scanned_per_form[text], 0) << "never scanned: " << text;
  }
  std::printf("scan_totality: %zu SQL expression forms, %d parts scanned\n",
              SqlExpressionForms().size(), scanned_);
}

// Per-row expressions in the scan, set on each planned flag shape (the planner does not build
// them yet): a value expression with each operator read instead of x (its bounds the shape's
// clamp range, so tiny and huge ranges reach the flush and the clamps), a row condition, and an
// expression group key; in both arithmetics and every bounding mode.
std::vector<std::function<void(query::ScanPlan*)>> ExpressionRewrites() {
  using namespace ::dpq::testing::expr;  // NOLINT: the tree constructors
  using query::expression::Op;
  const auto checked = [](Expr e) {
    auto c = std::make_shared<query::expression::CheckedExpression>();
    c->root = std::move(e);
    c->bounds = c->root.bounds;
    return std::shared_ptr<const query::expression::CheckedExpression>(std::move(c));
  };
  const Expr n = Col("n", ColumnType::kInteger, query::ValueInterval{-3, 7});
  const Expr raw_n = Col("n", ColumnType::kInteger);
  std::vector<std::function<Expr(const Expr&)>> values = {
      [=](const Expr& x) { return Bin(Op::kAdd, x, n); },
      [=](const Expr& x) { return Bin(Op::kSubtract, x, Int(1)); },
      [=](const Expr& x) { return Un(Op::kNegate, x); },
      [=](const Expr& x) { return Bin(Op::kMultiply, x, Dbl("0.5")); },
      [=](const Expr& x) { return Bin(Op::kDivide, x, Bin(Op::kAdd, n, Int(4))); },
      [=](const Expr& x) { return Fn(Expr::Kind::kAbs, {x}); },
      [=](const Expr& x) {
        return Fn(Expr::Kind::kLeast, {x, n});
      },
      [=](const Expr& x) {
        return Fn(Expr::Kind::kGreatest, {x, Int(0)});
      },
      [=](const Expr& x) {
        return Fn(Expr::Kind::kCoalesce, {x, n});
      },
      [=](const Expr& x) { return CastTo(x, query::expression::ValueType::kInt64); },
      [=](const Expr& x) {
        return Case({Bin(Op::kGt, raw_n, Int(0)), x, n}, true);
      },
  };
  std::vector<std::function<void(query::ScanPlan*)>> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.push_back([=](query::ScanPlan* scan) {
      const Expr x =
          Col("x", ColumnType::kDouble, query::ValueInterval{scan->clamp_lower, scan->clamp_upper});
      if (!scan->value_column.empty()) {
        scan->value_column.clear();
        scan->value_expression = checked(values[i](x));
      }
      if (i % 2 == 0) {
        scan->row_condition = checked(Bin(Op::kGt, Bin(Op::kMultiply, x, Dbl("0.5")), raw_n));
      }
      if (!scan->group_columns.empty()) {
        scan->group_expressions.assign(scan->group_columns.size(), nullptr);
        scan->group_expressions[0] =
            checked(Case({Bin(Op::kLt, Col("x", ColumnType::kDouble), Int(0)), Str("neg"),
                          CastTo(n, query::expression::ValueType::kString)},
                         true));
        scan->group_domains.clear();  // the key texts are new; no declared domain
      }
    });
  }
  return out;
}

TEST_F(ScanTotalityTest, EveryFlagShapeWithExpressionsScansWithoutError) {
  const auto rewrites = ExpressionRewrites();
  for (bool fallback : {false, true}) {
    AggregateScanner scanner(db());
    scanner.FailFloat8ScansForTesting(fallback);
    modes_.clear();
    size_t i = 0;
    std::map<AggregateKind, int> per_kind;
    for (const Shape& shape : FlagShapes()) {
      const size_t r = i++ % rewrites.size();
      if (PlanAndScan(shape.spec, absl::StrCat(shape.label, " expressions=", r), scanner, fallback,
                      rewrites[r])) {
        ++per_kind[shape.spec.aggregate];
      }
    }
    for (AggregateKind kind : query::kAllAggregateKinds) EXPECT_GT(per_kind[kind], 0);
    for (BoundingMode mode : kAllBoundingModes) {
      EXPECT_EQ(modes_.count(mode), 1u) << BoundingModeName(mode) << " fallback=" << fallback;
    }
  }
}

// Date and timestamp columns: every read is clamped into the declared bounds, so values written
// behind dpq's back ('infinity', years 4713 BC and 294276, far outside the bounds) never fail a
// filtered or bucket-grouped scan, and every released key is one of the declared buckets.
TEST_F(ScanTotalityTest, DateColumnsScanWithoutErrorOnAdversarialValues) {
  query::DatasetSchema schema;
  schema.name = "calendar";
  schema.privacy_unit = "pid";
  schema.columns.resize(3);
  schema.columns[0].name = "pid";
  schema.columns[0].type = ColumnType::kInteger;
  schema.columns[1].name = "day";
  schema.columns[1].type = ColumnType::kDate;
  schema.columns[1].calendar_lower = *query::ParseDate("2026-01-01");
  schema.columns[1].calendar_upper = *query::ParseDate("2026-12-31");
  schema.columns[2].name = "at";
  schema.columns[2].type = ColumnType::kTimestamp;
  schema.columns[2].calendar_lower = *query::ParseTimestamp("2026-01-01T00:00:00Z");
  schema.columns[2].calendar_upper = *query::ParseTimestamp("2026-06-30T23:59:59.999999Z");
  ASSERT_OK_AND_ASSIGN(CreatedDataset created,
                       CreateFromCsv(schema, "pid,day,at\n1,2026-05-05,2026-05-05T10:00:00Z\n"));
  const std::vector<std::string>& days = totality::AdversarialDays();
  const std::vector<std::string>& ats = totality::AdversarialTimestamps();
  std::vector<std::string> rows;
  for (size_t i = 0; i < days.size(); ++i) {
    for (size_t j = 0; j < ats.size(); ++j) {  // each pair in a unit of its own and all in one
      rows.push_back(
          absl::StrCat("(", 100 + i * ats.size() + j, ", ", days[i], ", ", ats[j], ", 1)"));
      rows.push_back(
          absl::StrCat("(99, ", days[i], ", ", ats[j], ", ", 1 + i * ats.size() + j, ")"));
    }
  }
  Sql(absl::StrCat("INSERT INTO ", DataTableName(created.schema.id),
                   " (pid, day, at, _dpq_rank) VALUES ", absl::StrJoin(rows, ", ")));
  AggregateScanner scanner(db());
  const std::vector<std::vector<std::string>> groupings = {{},
                                                           {"day:day"},
                                                           {"day:week"},
                                                           {"day:month"},
                                                           {"at:day"},
                                                           {"at:week"},
                                                           {"day:month", "at:month"}};
  const std::vector<std::string> filters = {
      "", "day >= '2026-11-23'",
      "at < '2026-03-01T00:00:00Z' OR day IN ('2026-01-01', '2026-12-31')",
      "day BETWEEN '0001-01-01' AND '9999-12-31' AND at != '2026-06-30T23:59:59.999999Z'",
      "NOT (day <> '2026-05-05') OR at IS NULL"};
  int scanned = 0;
  for (const auto& group_by : groupings) {
    for (const std::string& where : filters) {
      QuerySpec spec;
      spec.dataset = "calendar";
      spec.epsilon = 1;
      spec.max_contributions = 5;
      spec.max_partitions = 3;
      spec.group_by = group_by;
      spec.where = where;
      const std::string label = absl::StrCat(absl::StrJoin(group_by, ","), " where ", where);
      ASSERT_OK_AND_ASSIGN(query::QueryPlan plan, query::PlanQuery(spec, created.schema));
      absl::optional<query::filter::TypedFilter> filter;
      if (!where.empty()) {
        ASSERT_OK_AND_ASSIGN(filter, query::filter::ParseAndCheckFilter(where, created.schema));
      }
      ASSERT_OK_AND_ASSIGN(ScanResult r, scanner.Scan(plan.scan, absl::InfiniteFuture(),
                                                      filter ? &*filter : nullptr, "s"));
      EXPECT_EQ(r.recovered_data_error, "") << label;
      // The unit of 81 rows keeps 5 of them: something is counted, in some bucket.
      EXPECT_GT(group_by.empty() ? r.count : static_cast<int64_t>(r.groups.size()), 0) << label;
      for (const GroupStats& g : r.groups) {
        EXPECT_THAT(plan.declared_keys, ::testing::Contains(g.key)) << label;
      }
      ++scanned;
    }
  }
  EXPECT_EQ(scanned, 35);
  // The same table through DP SQL: DATE / TIMESTAMP literals and DATE_TRUNC groups compile to
  // the flag forms above, so every statement plans and scans.
  declared_ = &created.schema;
  for (const std::string& text : totality::SqlDateForms()) {
    absl::optional<sql::CompiledStatement> compiled = Compile(text, created.schema);
    ASSERT_TRUE(compiled.has_value()) << text;
    for (const QuerySpec& part : compiled->parts) {
      EXPECT_TRUE(PlanAndScan(part, text, scanner)) << text;
    }
  }
  declared_ = nullptr;
  EXPECT_EQ(scanned_, static_cast<int>(totality::SqlDateForms().size()));
}

// The fallback must be total too: with every float8 statement failing (fault injection), each
// shape is answered in numeric, on one bounds pair per kind of magnitude.
TEST_F(ScanTotalityTest, TheNumericFallbackAnswersEveryFlagShape) {
  AggregateScanner scanner(db());
  scanner.FailFloat8ScansForTesting(true);
  int fell_back = 0;
  const std::vector<Bounds> some = {{-1e-147, 1.0000000000000001e-147}, {-1e15, 1e15}, {1, 2.5}};
  for (const Shape& shape : FlagShapes(some)) {
    if (PlanAndScan(shape.spec, shape.label, scanner, /*expect_fallback=*/true)) ++fell_back;
  }
  EXPECT_GT(fell_back, 0);
  for (BoundingMode mode : kAllBoundingModes) {
    EXPECT_EQ(modes_.count(mode), 1u)
        << "bounding mode " << BoundingModeName(mode) << " never scanned";
  }
}

// The two scans that once failed on data, now answered from the float8 statement:
// a per-unit SUM whose two raw values of 1e308 overflowed float8 before the clamp, and a variance
// whose centred square of an exact 0 underflowed against the centre 6.9e-164 of
// [-1e-147, 1.0000000000000001e-147] (and of 1e-200 against the centre 0 of [-1, 1]).
TEST_F(ScanTotalityTest, PerUnitSumOfTwoValuesNear1e308IsClampedNotOverflowed) {
  Sql(absl::StrCat("INSERT INTO ", DataTableName(schema_.id),
                   " (pid, x, _dpq_rank) VALUES (9001, 1e308, 1), (9001, 1e308, 2)"));
  AggregateScanner scanner(db());
  for (query::AggregateKind kind : {AggregateKind::kSum, AggregateKind::kMean}) {
    QuerySpec spec;
    spec.dataset = "adversarial";
    spec.aggregate = kind;
    spec.column = "x";
    spec.epsilon = 1;
    spec.pre_aggregate = true;
    spec.lower = -1e15;
    spec.upper = 1e15;
    spec.where = "pid = 9001";
    ASSERT_OK_AND_ASSIGN(query::QueryPlan plan, query::PlanQuery(spec, schema_));
    ASSERT_OK_AND_ASSIGN(auto filter, query::filter::ParseAndCheckFilter(spec.where, schema_));
    ASSERT_OK_AND_ASSIGN(ScanResult r,
                         scanner.Scan(plan.scan, absl::InfiniteFuture(), &filter, "s"));
    EXPECT_EQ(r.recovered_data_error, "");
    EXPECT_EQ(r.count, 1);
    EXPECT_EQ(r.sum + plan.scan.center, 1e15) << query::AggregateName(kind);
  }
}

TEST_F(ScanTotalityTest, VarianceOfZeroAgainstATinyNonzeroCentreDoesNotUnderflow) {
  Sql(absl::StrCat("INSERT INTO ", DataTableName(schema_.id),
                   " (pid, x, _dpq_rank) VALUES (9002, 0, 1), (9003, 1e-200, 1)"));
  AggregateScanner scanner(db());
  const std::vector<std::pair<Bounds, std::string>> cases = {
      {{-1e-147, 1.0000000000000001e-147}, "pid = 9002"}, {{-1, 1}, "pid = 9003"}};
  for (const auto& [bounds, where] : cases) {
    for (query::AggregateKind kind : {AggregateKind::kVariance, AggregateKind::kStddev}) {
      QuerySpec spec;
      spec.dataset = "adversarial";
      spec.aggregate = kind;
      spec.column = "x";
      spec.epsilon = 1;
      spec.lower = bounds.lower;
      spec.upper = bounds.upper;
      spec.where = where;
      ASSERT_OK_AND_ASSIGN(query::QueryPlan plan, query::PlanQuery(spec, schema_));
      if (where == "pid = 9002") {
        ASSERT_NE(plan.scan.center, 0.0) << "the centre is tiny, not 0";
      }
      ASSERT_OK_AND_ASSIGN(auto filter, query::filter::ParseAndCheckFilter(where, schema_));
      ASSERT_OK_AND_ASSIGN(ScanResult r,
                           scanner.Scan(plan.scan, absl::InfiniteFuture(), &filter, "s"));
      EXPECT_EQ(r.recovered_data_error, "") << where;
      EXPECT_EQ(r.count, 1) << where;
      EXPECT_EQ(r.sum_sq, 0) << where << ": the square of a tiny difference flushes to 0";
    }
  }
}

// Where the float8 statement answers, the numeric fallback gives the same statistics (the
// stored-rank bounding keeps the same rows in both): it is the same scan, exactly computed.
TEST_F(ScanTotalityTest, TheNumericFallbackComputesTheSameStatistics) {
  ASSERT_OK_AND_ASSIGN(CreatedDataset tiny, CreateTinyDataset("tiny", 200));
  query::ScanPlan plan;
  plan.dataset_id = tiny.schema.id;
  plan.unit_column = "uid";
  plan.value_column = "x";
  plan.clamp_lower = 0;
  plan.clamp_upper = 10;
  plan.center = 5;
  plan.max_contributions = 1;
  plan.sum_squares = true;
  plan.bound_by_row_rank = true;
  plan.bucket_edges = {0, 2.5, 5, 10};
  AggregateScanner scanner(db());
  ASSERT_OK_AND_ASSIGN(ScanResult float8, scanner.Scan(plan));
  scanner.FailFloat8ScansForTesting(true);
  ASSERT_OK_AND_ASSIGN(ScanResult numeric, scanner.Scan(plan));
  EXPECT_EQ(float8.recovered_data_error, "");
  EXPECT_EQ(numeric.recovered_data_error, "22012");
  EXPECT_EQ(numeric.count, float8.count);
  EXPECT_EQ(numeric.buckets, float8.buckets);
  EXPECT_NEAR(numeric.sum, float8.sum, 1e-9 * std::abs(float8.sum) + 1e-12);
  EXPECT_NEAR(numeric.sum_sq, float8.sum_sq, 1e-9 * float8.sum_sq);
  EXPECT_EQ(float8.count, 200);
}

}  // namespace
}  // namespace dpq::store
