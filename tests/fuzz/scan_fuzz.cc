// Fuzz target: aggregate scans on real PostgreSQL over the adversarial dataset of the
// scan-totality test (tests/db/adversarial_dataset.h: NaN, +-Infinity, +-DBL_MAX, subnormals,
// int64's extremes, NULLs, a unit with thousands of rows). The input is either a flag query
// (first byte even: aggregate, grouping, per-unit, mechanism, K, M, filter and bounds, the bounds
// as raw doubles or one of the adversarial pairs) or a DP SQL statement (first byte odd: the rest
// of the input), compiled by the real parser and analyzer.
// Invariants: a request the planner or analyzer refuses is refused with INVALID_ARGUMENT or
// UNIMPLEMENTED (before any charge, from the request alone); a planned scan never fails and its
// float8 statement answers (no numeric fallback): a scan that fails on a stored value is an exact
// oracle.
// The cluster is started once per process (initdb + migrations, a few seconds) and stopped at exit
// or before an invariant failure aborts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/query/filter/type_checker.h"
#include "server/query/planner.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"
#include "server/store/aggregate_scanner.h"
#include "server/store/postgres/migrator.h"
#include "tests/db/adversarial_dataset.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::query::AggregateKind;
using dpq::query::QuerySpec;

struct Env {
  std::unique_ptr<dpq::testing::TestPostgres> pg;
  std::unique_ptr<dpq::store::Database> db;
  std::unique_ptr<dpq::store::AggregateScanner> scanner;
  dpq::query::DatasetSchema schema;
};

Env* TheEnv() {
  static Env* env = [] {
    auto* e = new Env;
    auto pg = dpq::testing::TestPostgres::Start();
    DPQ_FUZZ_CHECK(pg.ok(), "test cluster: %s", pg.status().ToString().c_str());
    e->pg = *std::move(pg);
    auto report = dpq::store::ApplyMigrations(e->pg->connection_url(), DPQ_FUZZ_MIGRATIONS_DIR);
    DPQ_FUZZ_CHECK(report.ok(), "migrations: %s", report.status().ToString().c_str());
    auto db = dpq::store::Database::Open(e->pg->connection_url(), 2);
    DPQ_FUZZ_CHECK(db.ok(), "open: %s", db.status().ToString().c_str());
    e->db = *std::move(db);
    auto schema = dpq::testing::CreateAdversarialDataset(e->db.get(), e->pg->connection_url());
    DPQ_FUZZ_CHECK(schema.ok(), "dataset: %s", schema.status().ToString().c_str());
    e->schema = *schema;
    e->scanner = std::make_unique<dpq::store::AggregateScanner>(e->db.get());
    // Stop the cluster at a normal exit (libFuzzer's -max_total_time, the corpus replay's end).
    std::atexit([] {
      Env* env = TheEnv();
      env->scanner.reset();
      env->db.reset();
      env->pg.reset();
    });
    return e;
  }();
  return env;
}

// Stops the cluster, then fails like DPQ_FUZZ_CHECK (abort runs no destructor).
#define SCAN_FUZZ_CHECK(cond, ...)       \
  do {                                   \
    if (!(cond)) {                       \
      std::fprintf(stderr, __VA_ARGS__); \
      std::fprintf(stderr, "\n");        \
      TheEnv()->db.reset();              \
      TheEnv()->pg.reset();              \
      DPQ_FUZZ_CHECK(cond, "see above"); \
    }                                    \
  } while (0)

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  double Double() {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | Byte();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_ - std::min(pos_, size_));
    pos_ = size_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

QuerySpec FlagSpec(Bytes& in) {
  static const char* const kFilters[] = {"",          "x > 0 OR n IS NULL", "n >= 0 AND cat <> 'b'",
                                         "pid = 100", "x BETWEEN -1 AND 1", "grp IN ('g0', '')"};
  QuerySpec spec;
  spec.dataset = "adversarial";
  const size_t kinds = std::size(dpq::query::kAllAggregateKinds);
  spec.aggregate = dpq::query::kAllAggregateKinds[in.Byte() % kinds];
  const uint8_t grouping = in.Byte() % 5;
  const uint8_t flags = in.Byte();
  spec.pre_aggregate = flags & 1;
  if (flags & 2) spec.mechanism = dpq::query::MechanismKind::kGaussian;
  spec.max_contributions = 1 + in.Byte() % 8;
  spec.max_partitions = 1 + in.Byte() % 4;
  spec.where = kFilters[in.Byte() % std::size(kFilters)];
  const uint8_t bounds = in.Byte();
  const auto& pairs = dpq::testing::AdversarialBounds();
  if (bounds < 200) {
    spec.lower = pairs[bounds % pairs.size()].lower;
    spec.upper = pairs[bounds % pairs.size()].upper;
  } else if (bounds < 250) {
    spec.lower = in.Double();
    spec.upper = in.Double();
  }  // else: no bounds (declared ones, none here: refused unless the aggregate needs none)
  const bool histogram = spec.aggregate == AggregateKind::kHistogram;
  if (spec.aggregate != AggregateKind::kCount) spec.column = histogram && (flags & 4) ? "grp" : "x";
  if (histogram && spec.column == "x" && spec.lower && spec.upper) {
    spec.bins = {*spec.lower, *spec.lower + (*spec.upper - *spec.lower) / 2, *spec.upper};
  }
  if (spec.aggregate == AggregateKind::kQuantile) {
    const int levels = 1 + in.Byte() % 8;
    for (int i = 0; i < levels; ++i) spec.quantiles.push_back((i + 1.0) / (levels + 1.0));
  }
  if (grouping == 1) spec.group_by = {"cat"};
  if (grouping == 2) spec.group_by = {"grp"}, spec.keys = {"g0", "", "zz"};
  if (grouping == 3) spec.group_by = {"grp"};
  if (grouping == 4) spec.group_by = {"cat", "grp"};
  if ((flags & 8) || spec.mechanism == dpq::query::MechanismKind::kGaussian) spec.delta = 1e-6;
  spec.epsilon = 1;
  return spec;
}

void PlanAndScan(const QuerySpec& spec, const std::string& what) {
  Env* env = TheEnv();
  absl::StatusOr<dpq::query::QueryPlan> plan = dpq::query::PlanQuery(spec, env->schema);
  if (!plan.ok()) {
    SCAN_FUZZ_CHECK(plan.status().code() == absl::StatusCode::kInvalidArgument,
                    "%s: planner refused with %s", what.c_str(), plan.status().ToString().c_str());
    return;
  }
  absl::optional<dpq::query::filter::TypedFilter> filter;
  if (!spec.where.empty()) {
    auto f = dpq::query::filter::ParseAndCheckFilter(spec.where, env->schema);
    if (!f.ok()) return;  // a refused filter is refused before any charge
    filter = *std::move(f);
  }
  absl::StatusOr<dpq::store::ScanResult> r = env->scanner->Scan(
      plan->scan, absl::InfiniteFuture(), filter ? &*filter : nullptr, "fuzz-seed");
  SCAN_FUZZ_CHECK(r.ok(), "%s: scan failed: %s", what.c_str(), r.status().ToString().c_str());
  SCAN_FUZZ_CHECK(r->recovered_data_error.empty(), "%s: the float8 scan raised %s", what.c_str(),
                  r->recovered_data_error.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  if ((in.Byte() & 1) == 0) {
    const QuerySpec spec = FlagSpec(in);
    PlanAndScan(spec, absl::StrCat("flag query ", dpq::query::AggregateName(spec.aggregate)));
    return 0;
  }
  const std::string text = in.Rest();
  absl::StatusOr<dpq::sql::Script> script = dpq::sql::Parse(text);
  if (!script.ok() || script->statements.size() != 1) return 0;
  absl::StatusOr<dpq::sql::CompiledStatement> compiled =
      dpq::sql::Analyze(script->statements[0], TheEnv()->schema);
  if (!compiled.ok()) return 0;  // the sql target checks the analyzer's refusals
  for (const QuerySpec& part : compiled->parts) PlanAndScan(part, text);
  return 0;
}
