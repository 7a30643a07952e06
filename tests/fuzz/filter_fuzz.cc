// Fuzz target: the `--where` filter language (server/query/filter) and its SQL rendering
// (server/store/filter, pure string building). Input: the filter text, any bytes.
// Invariants beyond "no crash, no sanitizer report":
//   - every refusal is INVALID_ARGUMENT with a short message (parser.h: an excerpt of ~20 bytes);
//   - an accepted filter's canonical text is itself accepted and canonical (it is the fingerprint
//     of the question: CanonicalText(Parse(CanonicalText(f))) == CanonicalText(f)), when it fits
//     the whole-input limit;
//   - the rendered SQL has one bound parameter per value, numbered from the first placeholder,
//     and holds none of the literals' text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"
#include "server/query/filter/parser.h"
#include "server/query/filter/type_checker.h"
#include "server/store/filter/filter_sql.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using dpq::query::ColumnType;
using dpq::query::DatasetSchema;
namespace filter = dpq::query::filter;

// Every column type, with and without bounds and categories; the single-letter names are the
// ones the parser's unit tests use, so their inputs (the seed corpus) type-check too.
const DatasetSchema& Schema() {
  static const DatasetSchema* schema = [] {
    auto* s = new DatasetSchema;
    s->name = "people";
    s->privacy_unit = "person_id";
    s->columns = {
        {"person_id", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
        {"age", ColumnType::kInteger, 0.0, 120.0, {}},
        {"wage", ColumnType::kDouble, 0.0, 1e6, {}},
        {"wages", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
        {"sex", ColumnType::kText, absl::nullopt, absl::nullopt, {"F", "M"}},
        {"name", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
        {"a", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
        {"b", ColumnType::kDouble, absl::nullopt, absl::nullopt, {}},
        {"c", ColumnType::kText, absl::nullopt, absl::nullopt, {}},
        {"d", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
    };
    return s;
  }();
  return *schema;
}

// Refusals must be INVALID_ARGUMENT and must not echo the input: the longest fixed message plus
// a ~20-byte excerpt and a column name (<= 63 bytes) stays far below this.
constexpr size_t kMaxMessageBytes = 400;

void CheckRefusal(const absl::Status& status, absl::string_view stage) {
  DPQ_FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument, "%s: %s",
                 std::string(stage).c_str(), status.ToString().c_str());
  DPQ_FUZZ_CHECK(status.message().size() <= kMaxMessageBytes, "%s message of %zu bytes",
                 std::string(stage).c_str(), status.message().size());
}

int CountValues(const filter::TypedExpr& e) {
  int n = static_cast<int>(e.values.size());
  for (const filter::TypedExpr& c : e.children) n += CountValues(c);
  return n;
}

std::string QuoteIdent(const std::string& name) { return absl::StrCat("\"", name, "\""); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<filter::Expr> expr = filter::ParseFilter(text);
  if (!expr.ok()) {
    CheckRefusal(expr.status(), "parse");
    return 0;
  }
  absl::StatusOr<filter::TypedFilter> typed = filter::CheckFilter(*expr, Schema());
  if (!typed.ok()) {
    CheckRefusal(typed.status(), "check");
    return 0;
  }
  DPQ_FUZZ_CHECK(typed->value_count == CountValues(typed->root), "value_count %d, tree has %d",
                 typed->value_count, CountValues(typed->root));

  // The whole-input limit (kMaxFilterBytes) bounds what an analyst sends; the canonical spelling
  // of a filter near it is longer (parentheses, spaces), so only shorter ones are re-parsed.
  const std::string canonical = filter::CanonicalText(*typed);
  if (canonical.size() <= filter::kMaxFilterBytes) {
    absl::StatusOr<filter::TypedFilter> again = filter::ParseAndCheckFilter(canonical, Schema());
    DPQ_FUZZ_CHECK(again.ok(), "canonical text refused: %s -> %s", canonical.c_str(),
                   again.status().ToString().c_str());
    const std::string canonical_again = filter::CanonicalText(*again);
    DPQ_FUZZ_CHECK(canonical_again == canonical, "canonical text not a fixed point: %s -> %s",
                   canonical.c_str(), canonical_again.c_str());
  }

  // The store numbers the filter's placeholders after its own parameters; any start works.
  constexpr int kFirstParam = 3;
  absl::StatusOr<dpq::store::SqlFragment> sql =
      dpq::store::RenderFilter(*typed, kFirstParam, QuoteIdent);
  DPQ_FUZZ_CHECK(sql.ok(), "render: %s", sql.status().ToString().c_str());
  DPQ_FUZZ_CHECK(sql->params.size() == static_cast<size_t>(typed->value_count),
                 "%zu params for %d values", sql->params.size(), typed->value_count);
  if (typed->value_count > 0) {
    const int last = kFirstParam + typed->value_count - 1;
    DPQ_FUZZ_CHECK(sql->sql.find(absl::StrCat("$", last, "::")) != std::string::npos,
                   "placeholder $%d missing: %s", last, sql->sql.c_str());
    DPQ_FUZZ_CHECK(sql->sql.find(absl::StrCat("$", last + 1, "::")) == std::string::npos,
                   "placeholder beyond $%d: %s", last, sql->sql.c_str());
  }
  // Literals travel only as parameters: a quote in the SQL text could only come from one.
  DPQ_FUZZ_CHECK(sql->sql.find('\'') == std::string::npos, "quote in SQL: %s", sql->sql.c_str());
  return 0;
}
