// A refusal by a configured limit (rate, concurrency, upload size, largest epsilon per query):
// RESOURCE_EXHAUSTED like a spent budget, marked so that metrics and alerts can tell the two apart
// (a burst of budget rejections is an alert; an analyst hitting a rate limit is policy working).
#ifndef DPQ_SERVER_BASE_LIMIT_ERROR_H_
#define DPQ_SERVER_BASE_LIMIT_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dpq {

absl::Status LimitError(absl::string_view message);
bool IsLimitError(const absl::Status& status);

}  // namespace dpq

#endif  // DPQ_SERVER_BASE_LIMIT_ERROR_H_
