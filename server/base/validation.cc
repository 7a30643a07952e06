#include "server/base/validation.h"

#include <cmath>

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
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be finite and > 0, got ", value));
  }
  return absl::OkStatus();
}

absl::Status ValidateIsNonNegative(double value, absl::string_view name) {
  if (!std::isfinite(value) || value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be finite and >= 0, got ", value));
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

absl::Status ValidateIdentifier(absl::string_view value, absl::string_view name) {
  bool ok = !value.empty() && value.size() <= 63 &&
            (value[0] == '_' || (value[0] >= 'a' && value[0] <= 'z'));
  for (char c : value) {
    if (!ok) break;
    ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }
  if (!ok) {
    // The value is an identifier the caller chose, not row data, so echoing it is safe; cap it.
    return absl::InvalidArgumentError(absl::StrCat(
        name, " must match ^[a-z_][a-z0-9_]{0,62}$, got \"", value.substr(0, 64), "\""));
  }
  return absl::OkStatus();
}

}  // namespace dpq
