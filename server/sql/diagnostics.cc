#include "server/sql/diagnostics.h"

#include "absl/strings/str_cat.h"

namespace dpq::sql {

std::string FormatPosition(Position p) {
  return absl::StrCat("line ", p.line, ", column ", p.column);
}

absl::Status Invalid(Position p, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("sql: ", FormatPosition(p), ": ", what));
}

absl::Status Unsupported(Position p, absl::string_view what) {
  return absl::UnimplementedError(absl::StrCat("sql: ", FormatPosition(p), ": ", what));
}

}  // namespace dpq::sql
