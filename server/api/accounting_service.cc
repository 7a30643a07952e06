// AccountingService: authenticate, copy the request's fields out, one call into
// engine::Accounting (server/engine/accounting.h), copy the numbers back.
#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"

namespace dpq::api {
namespace {

// engine::StillWanted for a call: DEADLINE_EXCEEDED once its deadline passed, CANCELLED once the
// client cancelled it.
engine::StillWanted CallStillWanted(const grpc::ServerContext& context) {
  return [&context]() -> absl::Status {
    if (std::chrono::system_clock::now() >= context.deadline()) {
      return absl::DeadlineExceededError("the call's deadline passed during the computation");
    }
    if (context.IsCancelled()) return absl::CancelledError("the call was cancelled");
    return absl::OkStatus();
  };
}

}  // namespace

grpc::Status AccountingService::Price(grpc::ServerContext* context, const v1::PriceRequest* request,
                                      v1::PriceResponse* response) {
  absl::Status status = [&]() -> absl::Status {
    // Any role may price: only the caller's identity is checked.
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    const std::vector<std::string> events(request->events().begin(), request->events().end());
    ASSIGN_OR_RETURN(dp::accounting::Price price,
                     options_.accounting->Price(request->accountant(), request->delta(), events,
                                                CallStillWanted(*context)));
    response->set_epsilon(price.epsilon);  // +inf when no finite epsilon holds at this delta
    response->set_delta(price.delta);
    response->set_accountant(request->accountant());
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

grpc::Status AccountingService::Calibrate(grpc::ServerContext* context,
                                          const v1::CalibrateRequest* request,
                                          v1::CalibrateResponse* response) {
  absl::Status status = [&]() -> absl::Status {
    // Any role may calibrate: only the caller's identity is checked.
    RETURN_IF_ERROR(Authenticate(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(engine::Calibration calibration,
                     options_.accounting->Calibrate(
                         request->accountant(), request->target_epsilon(), request->delta(),
                         request->q(), request->steps(), CallStillWanted(*context)));
    response->set_noise_multiplier(calibration.noise_multiplier);
    response->set_epsilon(calibration.epsilon);
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

}  // namespace dpq::api
