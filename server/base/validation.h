// Parameter checks shared by every layer. Each returns INVALID_ARGUMENT with a message that names
// the parameter, so a client learns which field to fix.
#ifndef DPQ_SERVER_BASE_VALIDATION_H_
#define DPQ_SERVER_BASE_VALIDATION_H_

#include <string>

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace dpq {

// Finite (not NaN, not +-inf).
absl::Status ValidateIsFinite(double value, absl::string_view name);
// Finite and > 0.
absl::Status ValidateIsPositive(double value, absl::string_view name);
// Finite and >= 0.
absl::Status ValidateIsNonNegative(double value, absl::string_view name);
// lo <= value < hi (value finite).
absl::Status ValidateInHalfOpenRange(double value, double lo, double hi, absl::string_view name);
// lo < value < hi (value finite).
absl::Status ValidateInOpenRange(double value, double lo, double hi, absl::string_view name);
// A request value as an error message shows it: quoted, its first 64 bytes only (then "..."), with
// control characters, NUL bytes and non-ASCII bytes escaped (absl::CHexEscape). Every message that
// echoes a caller's string goes through it, so a 1 MB value cannot make the status trailer exceed
// the client's metadata limit and a NUL never reaches a client or a log raw. Only for values the
// caller sent (names, options), never for row data.
std::string QuoteForMessage(absl::string_view value);

// Identifier for datasets and columns: ^[a-z_][a-z0-9_]{0,62}$ (fits a Postgres name unquoted).
// `name` is the request field, named in the error; an empty value is "required".
absl::Status ValidateIdentifier(absl::string_view value, absl::string_view name);
// Analyst names: like identifiers, plus '.' and '-' (e.g. "jane.doe"): ^[a-z_][a-z0-9_.-]{0,62}$.
absl::Status ValidateAnalystName(absl::string_view value, absl::string_view name);

// A client-chosen request id (queries, batches, SQL, training step reports): empty ("assign one")
// or printable ASCII without spaces, at most 128 characters. INVALID_ARGUMENT naming request_id.
absl::Status ValidateRequestId(absl::string_view id);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_VALIDATION_H_
