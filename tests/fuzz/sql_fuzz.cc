// Fuzz target: the DP SQL front end (server/sql): lexer, parser and analyser, then the planner on
// every part an accepted statement compiles to. Input: the statement, any bytes.
// Invariants beyond "no crash, no sanitizer report":
//   - every refusal is INVALID_ARGUMENT or UNIMPLEMENTED, starts with "sql: " (the position of the
//     offending clause) and is short (the message never echoes more than ~20 bytes of input);
//   - an accepted statement has at least one part, and its parts' epsilons add up to the
//     statement's epsilon in the ledger's exact units;
//   - the planner accepts every part or refuses it with INVALID_ARGUMENT (never another code).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "server/query/planner.h"
#include "server/query/privacy_units.h"
#include "server/sql/analyzer.h"
#include "server/sql/parser.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::query::ColumnType;
using dpq::query::DatasetSchema;

const DatasetSchema& Schema() {
  static const DatasetSchema* schema = [] {
    auto* s = new DatasetSchema;
    s->id = 1;
    s->name = "slid";
    s->privacy_unit = "person_id";
    s->columns = {
        {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
        {"wages", ColumnType::kDouble, 0.0, 100.0, {}},
        {"education", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
        {"age", ColumnType::kInteger, 0.0, 120.0, {}},
        {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {"Female", "Male"}},
        {"language", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
    };
    return s;
  }();
  return *schema;
}

// The longest fixed message plus a ~20-byte excerpt and a few names (<= 63 bytes each).
constexpr size_t kMaxMessageBytes = 600;

void CheckRefusal(const absl::Status& status, const char* stage) {
  DPQ_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument ||
                     status.code() == absl::StatusCode::kUnimplemented,
                 "%s: %s", stage, status.ToString().c_str());
  DPQ_FUZZ_CHECK(absl::StartsWith(status.message(), "sql: "), "%s: %s", stage,
                 status.ToString().c_str());
  DPQ_FUZZ_CHECK(status.message().size() <= kMaxMessageBytes, "%s: message of %zu bytes", stage,
                 status.message().size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dpq::sql::Script> script = dpq::sql::Parse(text);
  if (!script.ok()) {
    CheckRefusal(script.status(), "parse");
    return 0;
  }
  DPQ_FUZZ_CHECK(!script->statements.empty(), "an accepted script without statements");
  for (const dpq::sql::Statement& st : script->statements) {
    if (st.table != "slid") continue;  // the engine answers NOT_FOUND for other datasets
    absl::StatusOr<dpq::sql::CompiledStatement> c = dpq::sql::Analyze(st, Schema());
    if (!c.ok()) {
      // WHERE type errors come from the filter checker, prefixed with the clause's position.
      CheckRefusal(c.status(), "analyze");
      continue;
    }
    DPQ_FUZZ_CHECK(!c->parts.empty(), "a statement without aggregates was accepted");
    int64_t total = 0;
    for (const dpq::query::QuerySpec& part : c->parts) {
      absl::StatusOr<int64_t> units = dpq::query::EpsilonToUnits(part.epsilon, "epsilon");
      DPQ_FUZZ_CHECK(units.ok(), "part epsilon %g not chargeable", part.epsilon);
      total += *units;
      absl::StatusOr<dpq::query::QueryPlan> plan = dpq::query::PlanQuery(part, Schema());
      DPQ_FUZZ_CHECK(plan.ok() || plan.status().code() == absl::StatusCode::kInvalidArgument,
                     "plan: %s", plan.status().ToString().c_str());
    }
    absl::StatusOr<int64_t> whole = dpq::query::EpsilonToUnits(c->epsilon, "epsilon");
    DPQ_FUZZ_CHECK(whole.ok(), "statement epsilon %g not chargeable", c->epsilon);
    // A part's epsilon travels as a double (QuerySpec::epsilon) and the planner reads its units
    // back with llround(epsilon * 1e12). A share u below 2^50 is exact as a double, and the
    // division and multiplication by 1e12 move it by at most 2 u 2^-53 <= 1/4 unit, so llround
    // restores it: the parts add up exactly. Above, each share may move by up to 3 u 2^-53 + 1/2
    // units, so the sum is within 4 whole 2^-53 + n units (at epsilon 1e6: 450 units, 4.5e-10).
    const int64_t slack =
        *whole < (int64_t{1} << 50)
            ? 0
            : static_cast<int64_t>(std::ldexp(4.0 * static_cast<double>(*whole), -53)) +
                  static_cast<int64_t>(c->parts.size());
    DPQ_FUZZ_CHECK(std::llabs(*whole - total) <= slack,
                   "parts add up to %lld units, statement %g (%lld units, slack %lld)",
                   static_cast<long long>(total), c->epsilon, static_cast<long long>(*whole),
                   static_cast<long long>(slack));
  }
  return 0;
}
