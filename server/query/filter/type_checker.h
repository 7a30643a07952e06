// Type checking of a parsed filter against a dataset's schema, and its canonical text.
#ifndef DPQ_SERVER_QUERY_FILTER_TYPE_CHECKER_H_
#define DPQ_SERVER_QUERY_FILTER_TYPE_CHECKER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"
#include "server/query/filter/ast.h"

namespace dpq::query::filter {

// Resolves every column against `schema` and converts every literal to the column's domain
// (TypedValue in ast.h). Rules:
//   - the column must exist in the schema;
//   - text columns take string literals; integer and double columns take numeric literals (an
//     integer column also takes decimals, compared exactly: age > 29.5 keeps 30 and up);
//   - numbers compared with a double column must be finite doubles that do not underflow to 0; numbers that are not int64
//     compared with an integer column must have a decimal exponent within [-1000, 1000] once
//     normalised (what SQL's numeric type accepts);
//   - IS [NOT] NULL applies to any column.
// Errors: INVALID_ARGUMENT "where: at position N: ..." naming the column and the expected kind.
absl::StatusOr<TypedFilter> CheckFilter(const Expr& expr, const DatasetSchema& schema);

// ParseFilter then CheckFilter.
absl::StatusOr<TypedFilter> ParseAndCheckFilter(absl::string_view text,
                                                const DatasetSchema& schema);

// A canonical, fully parenthesised spelling of the filter, e.g.
//   ((age > 30) AND (sex IN ('F', 'M')))
// Filters that differ only in whitespace, keyword case, redundant parentheses, '!=' versus '<>'
// or the spelling of equal numbers (1.50 / 15e-1) get the same text: use it in query fingerprints.
// It contains only what the analyst wrote, never data.
std::string CanonicalText(const TypedFilter& filter);

}  // namespace dpq::query::filter

#endif  // DPQ_SERVER_QUERY_FILTER_TYPE_CHECKER_H_
