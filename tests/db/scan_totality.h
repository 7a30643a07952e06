// The SQL forms and the scanning fixture the scan-totality tests share (scan_totality_test.cc:
// one dataset; joined_scan_totality_test.cc: joins): every SQL aggregate function's forms, the
// per-row expression forms, and ScanTotalityTest, which plans and scans a shape over the
// adversarial dataset (adversarial_dataset.h) and records what was reached.
#ifndef DPQ_TESTS_DB_SCAN_TOTALITY_H_
#define DPQ_TESTS_DB_SCAN_TOTALITY_H_

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/scan_sql.h"
#include "tests/db/adversarial_dataset.h"
#include "tests/db/store_test_env.h"
#include "tests/support/status_matchers.h"

namespace dpq::store::totality {

using ::dpq::testing::AdversarialBounds;
using ::dpq::testing::Bounds;
using query::AggregateKind;
using query::QuerySpec;

// SQL forms of one aggregate function: the call with its bounds arguments, in every grouping the
// analyzer accepts for it. A function this switch does not know fails the test.
inline std::vector<std::string> SqlFormsFor(const std::string& function, Bounds b) {
  const std::string bounds = absl::StrFormat("(%.17g, %.17g)", b.lower, b.upper);
  std::vector<std::string> calls;
  if (function == "COUNT") {
    calls = {"COUNT(*)", "COUNT(x)", "COUNT(*, contribution_bounds_per_group => (1, 3))",
             "COUNT(x, contribution_bounds_per_group => (0, 2))"};
  } else if (function == "SUM" || function == "AVG") {
    calls = {absl::StrCat(function, "(x, contribution_bounds_per_group => ", bounds, ")"),
             absl::StrCat(function, "(x, contribution_bounds_per_row => ", bounds, ")")};
  } else if (function == "VAR_POP" || function == "STDDEV_POP") {
    calls = {absl::StrCat(function, "(x, contribution_bounds_per_row => ", bounds, ")")};
  } else if (function == "PERCENTILE_CONT") {
    calls = {absl::StrCat("PERCENTILE_CONT(x, 0.5, contribution_bounds_per_row => ", bounds, ")")};
  } else if (function == "APPROX_QUANTILES") {
    calls = {absl::StrCat("APPROX_QUANTILES(x, 4, contribution_bounds_per_row => ", bounds, ")")};
  } else {
    ADD_FAILURE() << "the scan-totality test has no SQL forms for " << function
                  << ": add them to SqlFormsFor";
    return {};
  }
  const std::string head =
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, "
      "max_groups_contributed = 2";
  std::vector<std::string> out;
  for (const std::string& call : calls) {
    for (const std::string& where : {std::string(""), std::string(" WHERE x > 0 OR n IS NULL")}) {
      out.push_back(absl::StrCat(head, ") ", call, " FROM adversarial", where));
      out.push_back(
          absl::StrCat(head, ") cat, ", call, " FROM adversarial", where, " GROUP BY cat"));
      out.push_back(
          absl::StrCat(head, ") grp, ", call, " FROM adversarial", where, " GROUP BY grp"));
      out.push_back(
          absl::StrCat(head, ") grp, ", call, " FROM adversarial WHERE grp IN ('g0', '', 'zz')",
                       where.empty() ? "" : " AND (x > 0 OR n IS NULL)", " GROUP BY grp"));
    }
  }
  if (function == "COUNT") {
    out.push_back(absl::StrCat(head, ") WIDTH_BUCKET(x, ", b.lower, ", ", b.upper,
                               ", 4) AS bucket, COUNT(*) FROM adversarial GROUP BY bucket"));
    out.push_back(absl::StrFormat(
        "%s) WIDTH_BUCKET(x, (%.17g, %.17g)) AS bucket, COUNT(*) FROM adversarial GROUP BY bucket",
        head, b.lower, b.upper));
    out.push_back(
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, max_rows_contributed "
        "= 3) grp, COUNT(*) FROM adversarial GROUP BY grp");
    out.push_back(
        "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 3) cat, "
        "COUNT(*) FROM adversarial GROUP BY cat");
  }
  return out;
}

// `text` compiled by the real parser and analyzer against `schema`; nullopt when the analyzer
// refuses it (which must be INVALID_ARGUMENT or UNIMPLEMENTED: before the charge, from the text).
inline absl::optional<sql::CompiledStatement> Compile(const std::string& text,
                                                      const query::DatasetSchema& schema) {
  absl::StatusOr<sql::Script> script = sql::Parse(text);
  EXPECT_TRUE(script.ok()) << text << ": " << script.status();
  if (!script.ok()) return absl::nullopt;
  absl::StatusOr<sql::CompiledStatement> compiled = sql::Analyze(script->statements[0], schema);
  if (!compiled.ok()) {
    EXPECT_THAT(compiled.status().code(), ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                                           absl::StatusCode::kUnimplemented))
        << text << ": " << compiled.status();
    return absl::nullopt;
  }
  return *std::move(compiled);
}

class ScanTotalityTest : public ::dpq::testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_OK_AND_ASSIGN(schema_, ::dpq::testing::CreateAdversarialDataset(db(), url()));
  }

  // Plans and scans `spec`; records what was reached. Returns false when the planner refused.
  bool PlanAndScan(const QuerySpec& spec, const std::string& label, AggregateScanner& scanner,
                   bool expect_fallback = false,
                   const std::function<void(query::ScanPlan*)>& rewrite = nullptr) {
    const query::DatasetSchema& schema = declared_ != nullptr ? *declared_ : schema_;
    absl::StatusOr<query::QueryPlan> plan = query::PlanQuery(spec, schema);
    if (plan.ok() && rewrite) rewrite(&plan->scan);
    if (!plan.ok()) {
      EXPECT_THAT(plan.status().code(), ::testing::AnyOf(absl::StatusCode::kInvalidArgument,
                                                         absl::StatusCode::kUnimplemented))
          << label << ": " << plan.status();
      return false;
    }
    absl::optional<query::filter::TypedFilter> filter;
    if (!spec.where.empty()) {
      absl::StatusOr<query::filter::TypedFilter> f =
          query::filter::ParseAndCheckFilter(spec.where, schema);
      EXPECT_TRUE(f.ok()) << label << ": " << f.status();
      if (!f.ok()) return false;
      filter = *std::move(f);
    }
    absl::StatusOr<ScanResult> r =
        scanner.Scan(plan->scan, absl::InfiniteFuture(), filter ? &*filter : nullptr, "seed");
    EXPECT_TRUE(r.ok()) << label << ": " << r.status();
    if (!r.ok()) return false;
    if (expect_fallback) {
      EXPECT_EQ(r->recovered_data_error, "22012") << label;
    } else {
      EXPECT_EQ(r->recovered_data_error, "") << label << ": the float8 statement failed";
    }
    for (const GroupStats& g : r->groups.empty() ? std::vector<GroupStats>{*r} : r->groups) {
      EXPECT_TRUE(std::isfinite(g.sum) && std::isfinite(g.sum_sq)) << label;
    }
    modes_.insert(BoundingModeOf(plan->scan, filter.has_value()));
    ++scanned_;
    return true;
  }

  query::DatasetSchema schema_;
  // When set, the schema queries are planned against: the same table with declared bounds.
  const query::DatasetSchema* declared_ = nullptr;
  std::set<BoundingMode> modes_;
  int scanned_ = 0;
};

// Per-row expression statements, compiled by the real parser, analyzer and planner: every
// construct (arithmetic, division, CASE, IF, COALESCE, ABS, LEAST/GREATEST, CASTs, COUNT of an
// expression, COUNT(DISTINCT unit), WHERE conditions over columns, computed and public group keys,
// key-only selects, WIDTH_BUCKET over an expression, per-unit and row-clamped bounds). x and n get
// declared bounds (x each adversarial pair, n [-3, 7]) so that bounds can be derived; the stored
// values stay the adversarial ones, far outside them.
inline std::vector<std::string> SqlExpressionForms() {
  const std::string head =
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, "
      "max_groups_contributed = 2) ";
  const std::vector<std::string> bodies = {
      "SUM(x + n) AS a, AVG(x * 2 - n) AS b FROM adversarial",
      "SUM(x / (n + 4)) AS a, SUM(-x) AS b FROM adversarial",
      "COUNT(CASE WHEN x > 0 THEN 1 END) AS a, COUNT(x + n) AS b FROM adversarial",
      "COUNT(DISTINCT pid) AS a, SUM(IF(cat = 'a', x, 0)) AS b FROM adversarial",
      "SUM(ABS(x)) AS a, SUM(LEAST(x, n)) AS b, SUM(GREATEST(x, n)) AS c FROM adversarial",
      "SUM(COALESCE(x, n, 0)) AS a, SUM(IFNULL(n, 1)) AS b FROM adversarial",
      "SUM(CAST(x AS INT64)) AS a, AVG(CAST(n AS FLOAT64) / 3) AS b FROM adversarial",
      "VAR_POP(x * n) AS a, STDDEV_POP(x - n) AS b FROM adversarial",
      "PERCENTILE_CONT(x + 1, 0.5) AS a FROM adversarial",
      "SUM(x + n, contribution_bounds_per_group => (-5, 5)) AS a, "
      "AVG(x * n, contribution_bounds_per_group => (0, 2)) AS b FROM adversarial",
      "SUM(x + n, contribution_bounds_per_row => (-1, 1)) AS a FROM adversarial",
      "COUNT(*) AS a FROM adversarial WHERE x * 2 > n OR ABS(n) < x",
      "SUM(x) AS a FROM adversarial WHERE x > n AND CASE WHEN cat = 'a' THEN n > 0 ELSE x < 1 END",
      "CASE WHEN x < 0 THEN 'neg' WHEN x > 0 THEN 'pos' END AS k, COUNT(*) AS a, SUM(x + n) AS b "
      "FROM adversarial GROUP BY k",
      "CAST(n AS STRING) AS k, COUNT(*) AS a, AVG(x / 2) AS b FROM adversarial GROUP BY k",
      "cat, CAST(x * 2 AS INT64) AS k, COUNT(*) AS a FROM adversarial GROUP BY cat, k",
      "grp FROM adversarial WHERE x * n > 0 GROUP BY grp",
      "CASE WHEN n > 0 THEN 1 ELSE 2 END AS k FROM adversarial GROUP BY k",
      "WIDTH_BUCKET(x + n, -10, 10, 4) AS b, COUNT(*) AS a FROM adversarial GROUP BY b",
  };
  std::vector<std::string> out;
  for (const std::string& body : bodies) out.push_back(head + body);
  return out;
}

// Stored dates and timestamps no dpq load writes but a writer behind dpq's back could: the
// infinities, the ends of dpq's years, NULL, BC and far-future years, a rounding edge, and values
// just past ordinary bounds (SQL literals, for an INSERT).
inline const std::vector<std::string>& AdversarialDays() {
  static const auto* const kDays = new std::vector<std::string>{
      "'infinity'",      "'-infinity'",     "'0001-01-01'", "'9999-12-31'", "NULL",
      "'4713-01-01 BC'", "'5874897-12-31'", "'1999-01-01'", "'2200-01-01'"};
  return *kDays;
}
inline const std::vector<std::string>& AdversarialTimestamps() {
  static const auto* const kTimestamps =
      new std::vector<std::string>{"'infinity'",
                                   "'-infinity'",
                                   "'0001-01-01 00:00:00'",
                                   "'9999-12-31 23:59:59.999999'",
                                   "NULL",
                                   "'4713-01-01 00:00:00 BC'",
                                   "'294276-12-31 23:59:59.999999'",
                                   "'2026-06-30 23:59:59.9999995'",
                                   "'2027-01-01'"};
  return *kTimestamps;
}

// DP SQL over the date and timestamp columns of DateColumnsScanWithoutErrorOnAdversarialValues'
// table `calendar` (pid, day, at): every WHERE form on dates and every DATE_TRUNC grouping, COUNT
// in each of its bounding forms and key-only selects. Each must compile (they are all valid).
inline std::vector<std::string> SqlDateForms() {
  const std::string head =
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_contributed = 3) ";
  const std::vector<std::string> bodies = {
      "COUNT(*) FROM calendar WHERE day >= DATE '2026-11-23'",
      "COUNT(*, contribution_bounds_per_group => (0, 5)) FROM calendar WHERE at < TIMESTAMP "
      "'2026-03-01 00:00:00' OR day IN (DATE '2026-01-01', DATE '2026-12-31')",
      "COUNT(*) FROM calendar WHERE day BETWEEN DATE '0001-01-01' AND DATE '9999-12-31' AND "
      "at <> TIMESTAMP '2026-06-30 23:59:59.999999'",
      "COUNT(DISTINCT pid) FROM calendar WHERE NOT (day <> '2026-05-05') OR at IS NULL",
      "COUNT(*) FROM calendar WHERE day IS NOT NULL AND day NOT BETWEEN DATE '2026-02-01' AND "
      "DATE '2026-11-30'",
      "DATE_TRUNC(day, DAY) AS d, COUNT(*) FROM calendar GROUP BY d",
      "DATE_TRUNC(day, WEEK), COUNT(*, contribution_bounds_per_group => (0, 5)) FROM calendar "
      "WHERE at >= TIMESTAMP '2026-06-30T23:59:59.999999Z' GROUP BY DATE_TRUNC(day, WEEK)",
      "TIMESTAMP_TRUNC(at, MONTH) AS m, DATE_TRUNC(day, MONTH) AS dm, COUNT(*) FROM calendar "
      "GROUP BY m, dm",
      "TIMESTAMP_TRUNC(at, DAY) AS d, COUNT(DISTINCT pid) FROM calendar GROUP BY d",
      "DATE_TRUNC(day, ISOWEEK) AS w FROM calendar WHERE day < DATE '0002-01-01' GROUP BY w",
      "COUNT(*, contribution_bounds_per_group => (1, 3)) FROM calendar WHERE day IS NULL OR "
      "day = DATE '2026-12-31' GROUP BY DATE_TRUNC(at, WEEK)",
      "COUNT(*) FROM calendar WHERE at > TIMESTAMP '9999-12-31 23:59:59.999999' OR day < DATE "
      "'0001-01-02'",
  };
  std::vector<std::string> out;
  for (const std::string& body : bodies) out.push_back(head + body);
  out.push_back(
      "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_rows_contributed = 3) "
      "COUNT(*) FROM calendar WHERE day > DATE '2026-06-01'");
  return out;
}

// The flag interface's query shapes (ScanTotalityTest, and the sharded scans of
// sharded_dataset_test).
enum class Grouping { kNone, kDeclaredKeys, kKeyList, kSelectedKeys, kNumericBins, kTextHistogram };
inline constexpr Grouping kAllGroupings[] = {Grouping::kNone,        Grouping::kDeclaredKeys,
                                             Grouping::kKeyList,     Grouping::kSelectedKeys,
                                             Grouping::kNumericBins, Grouping::kTextHistogram};
inline std::string GroupingName(Grouping g) {
  switch (g) {
    case Grouping::kNone: return "none";
    case Grouping::kDeclaredKeys: return "declared_keys";
    case Grouping::kKeyList: return "key_list";
    case Grouping::kSelectedKeys: return "selected_keys";
    case Grouping::kNumericBins: return "numeric_bins";
    case Grouping::kTextHistogram: return "text_histogram";
  }
  return "?";
}

// Filters, each applied before contribution bounding: none, one on the value column (NaN passes
// `x > 0` in PostgreSQL's order), one on the integer column with its extremes, one on text.
inline const std::vector<std::string>& Filters() {
  static const auto* const kFilters =
      new std::vector<std::string>{"", "x > 0 OR n IS NULL", "n >= 0 AND cat <> 'b'"};
  return *kFilters;
}

// One query shape to plan: the spec and the labels the coverage is counted by.
struct Shape {
  QuerySpec spec;
  Grouping grouping = Grouping::kNone;
  std::string label;
};

// The specs of one aggregate kind with one grouping and bounding request; empty where the
// combination does not exist for that kind (bins and text histograms are histogram-only).
// A kind this switch does not know fails the test: new aggregates must be covered here.
inline std::vector<QuerySpec> SpecsFor(AggregateKind kind, Grouping grouping, bool per_unit,
                                       Bounds b) {
  QuerySpec spec;
  spec.dataset = "adversarial";
  spec.aggregate = kind;
  spec.epsilon = 1;
  spec.pre_aggregate = per_unit;
  spec.max_contributions = per_unit ? 1 : 5;
  spec.max_partitions = 2;
  spec.lower = b.lower;
  spec.upper = b.upper;
  switch (kind) {
    case AggregateKind::kCount:
      if (!per_unit) spec.lower.reset(), spec.upper.reset();
      break;
    case AggregateKind::kSum:
    case AggregateKind::kMean:
    case AggregateKind::kVariance:
    case AggregateKind::kStddev: spec.column = "x"; break;
    case AggregateKind::kQuantile: spec.column = "x"; break;
    case AggregateKind::kHistogram:
      spec.column = grouping == Grouping::kTextHistogram ? "grp" : "x";
      break;
    default:
      ADD_FAILURE() << "the scan-totality test has no shapes for aggregate "
                    << query::AggregateName(kind) << ": add them to SpecsFor";
      return {};
  }
  const bool histogram = kind == AggregateKind::kHistogram;
  if (histogram && grouping == Grouping::kTextHistogram) {
    spec.lower.reset(), spec.upper.reset();
  } else if (histogram) {
    if (grouping != Grouping::kNumericBins) return {};
    spec.bins = {b.lower, b.lower + (b.upper - b.lower) / 2, b.upper};
  } else if (grouping == Grouping::kNumericBins || grouping == Grouping::kTextHistogram) {
    return {};
  }
  switch (grouping) {
    case Grouping::kDeclaredKeys: spec.group_by = {"cat"}; break;
    case Grouping::kKeyList: spec.group_by = {"grp"}, spec.keys = {"g0", "g1", "", "zz"}; break;
    case Grouping::kSelectedKeys: spec.group_by = {"grp"}; break;
    default: break;
  }
  if (grouping == Grouping::kSelectedKeys || (histogram && grouping == Grouping::kTextHistogram)) {
    spec.delta = 1e-6;
  }
  std::vector<QuerySpec> out;
  if (kind == AggregateKind::kQuantile) {
    spec.quantiles = {0.5};
    out.push_back(spec);
    spec.quantiles = {0.05, 0.25, 0.4, 0.5, 0.6, 0.75, 0.95};  // read off the noisy CDF
  }
  out.push_back(spec);
  if (kind == AggregateKind::kMean || kind == AggregateKind::kSum) {
    spec.mechanism = query::MechanismKind::kGaussian;
    spec.delta = 1e-6;
    out.push_back(spec);
  }
  return out;
}

inline std::vector<Shape> FlagShapes(const std::vector<Bounds>& bounds = AdversarialBounds()) {
  std::vector<Shape> shapes;
  for (AggregateKind kind : query::kAllAggregateKinds) {
    for (Grouping grouping : kAllGroupings) {
      for (bool per_unit : {false, true}) {
        for (const Bounds& b : bounds) {
          for (QuerySpec spec : SpecsFor(kind, grouping, per_unit, b)) {
            for (const std::string& where : Filters()) {
              spec.where = where;
              shapes.push_back(
                  {spec, grouping,
                   absl::StrFormat("%s per_unit=%d grouping=%s bounds=[%.17g, %.17g] "
                                   "mechanism=%s quantiles=%d where=\"%s\"",
                                   query::AggregateName(kind), per_unit, GroupingName(grouping),
                                   b.lower, b.upper, query::MechanismName(spec.mechanism),
                                   spec.quantiles.size(), where)});
            }
          }
        }
      }
    }
  }
  return shapes;
}

}  // namespace dpq::store::totality

#endif  // DPQ_TESTS_DB_SCAN_TOTALITY_H_
