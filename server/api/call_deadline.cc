#include "server/api/call_deadline.h"

#include <chrono>

namespace dpq::api {

absl::Time CallDeadline(const grpc::ServerContext& context) {
  const auto d = context.deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

}  // namespace dpq::api
