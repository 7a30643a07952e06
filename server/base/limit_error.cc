#include "server/base/limit_error.h"

namespace dpq {
namespace {
constexpr absl::string_view kLimitPayload = "type.dpq/limit";
}  // namespace

absl::Status LimitError(absl::string_view message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kLimitPayload, absl::Cord("1"));
  return status;
}

bool IsLimitError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kResourceExhausted &&
         status.GetPayload(kLimitPayload).has_value();
}

}  // namespace dpq
