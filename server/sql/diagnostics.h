#ifndef DPQ_SERVER_SQL_DIAGNOSTICS_H_
#define DPQ_SERVER_SQL_DIAGNOSTICS_H_

// The one shape of every SQL front-end error: "sql: line L, column C: what to do". The lexer,
// parser, analyser and WIDTH_BUCKET reader all build their statuses here, so a message's prefix and
// its position read the same whichever stage refused the text.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/sql/ast.h"

namespace dpq::sql {

// INVALID_ARGUMENT: the text is wrong and the message says how to fix it.
absl::Status Invalid(Position p, absl::string_view what);

// UNIMPLEMENTED: well-formed SQL that dpq does not answer (a join, a window function, ...).
absl::Status Unsupported(Position p, absl::string_view what);

}  // namespace dpq::sql

#endif  // DPQ_SERVER_SQL_DIAGNOSTICS_H_
