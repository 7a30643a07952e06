// Syntax of the `--where` filter language (grammar and limits in ast.h).
#ifndef DPQ_SERVER_QUERY_FILTER_PARSER_H_
#define DPQ_SERVER_QUERY_FILTER_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/query/filter/ast.h"

namespace dpq::query::filter {

// Parses `text` into a syntax tree; no schema is consulted (see CheckFilter). Errors are
// INVALID_ARGUMENT "where: at position N: <what>", N the 1-based character position of the leftmost
// problem; a message quotes at most ~20 bytes of the input. Refused: empty or blank input, input
// over kMaxFilterBytes, anything outside the grammar (';', comments, double quotes, unbalanced
// quotes or parentheses, trailing tokens, a literal or keyword where a column is expected, NULL as
// a literal), nesting deeper than kMaxFilterDepth, more than kMaxFilterNodes nodes, IN lists longer
// than kMaxInListSize.
absl::StatusOr<Expr> ParseFilter(absl::string_view text);

}  // namespace dpq::query::filter

#endif  // DPQ_SERVER_QUERY_FILTER_PARSER_H_
