#include "server/base/validation.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace dpq {

absl::Status ValidateIsFinite(double value, absl::string_view name) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be finite, got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateIsPositive(double value, absl::string_view name) {
  if (!std::isfinite(value) || value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be finite and > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateIsNonNegative(double value, absl::string_view name) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be finite and >= 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateInHalfOpenRange(double value, double lo, double hi, absl::string_view name) {
  if (!std::isfinite(value) || value < lo || value >= hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must lie in [", lo, ", ", hi, "), got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateInOpenRange(double value, double lo, double hi, absl::string_view name) {
  if (!std::isfinite(value) || value <= lo || value >= hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must lie in (", lo, ", ", hi, "), got ", value));
  }
  return absl::OkStatus();
}

std::string QuoteForMessage(absl::string_view value) {
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, 64)), value.size() > 64 ? "..." : "",
                      "\"");
}

namespace {

// Names are matched against a pattern of [a-z0-9_] plus `extra`; one check for datasets, columns
// and analysts, so a NUL byte, a control character or an empty name is refused the same way
// everywhere, before any lookup (a NUL used to truncate the name in the database's text input).
absl::Status ValidateName(absl::string_view value, absl::string_view name, absl::string_view extra,
                          absl::string_view pattern) {
  if (value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is required: it was empty; it must match ", pattern));
  }
  bool ok = value.size() <= 63 && (value[0] == '_' || (value[0] >= 'a' && value[0] <= 'z'));
  for (char c : value) {
    if (!ok) break;
    ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         absl::string_view(extra).find(c) != absl::string_view::npos;
  }
  if (!ok) {
    // The value is a name the caller chose, not row data, so echoing it is safe; it is capped and
    // escaped so that control characters and NUL bytes are shown, not sent.
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must match ", pattern, ", got ", QuoteForMessage(value)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateIdentifier(absl::string_view value, absl::string_view name) {
  return ValidateName(value, name, "", "^[a-z_][a-z0-9_]{0,62}$");
}

absl::Status ValidateAnalystName(absl::string_view value, absl::string_view name) {
  return ValidateName(value, name, ".-", "^[a-z_][a-z0-9_.-]{0,62}$");
}

absl::Status ValidateRequestId(absl::string_view id) {
  constexpr size_t kMaxRequestIdLength = 128;
  if (id.size() > kMaxRequestIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id must be at most ", kMaxRequestIdLength, " characters"));
  }
  for (char c : id) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError("request_id must be printable ASCII without spaces");
    }
  }
  return absl::OkStatus();
}

}  // namespace dpq
