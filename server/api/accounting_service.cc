// AccountingService: authenticate, validate each request field (messages name the proto field),
// one call into dp/accounting, copy the numbers out. No accounting math here: prices come from
// PriceEvents and noise multipliers from CalibrateNoiseMultiplier (server/dp/accounting/accountant.h).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"

namespace dpq::api {
namespace {

namespace acc = dp::accounting;

// Request size caps. The RDP/zCDP/basic/advanced work is linear in the number of events and
// trivial at these sizes; PLD builds one distribution per distinct mechanism and convolves them,
// so an unbounded list of distinct specs could pin a core for minutes. 1,000 specs covers any
// declared workload (a count=N suffix expresses repetition without more specs). PLD gets a tighter
// cap: measured here, 50 distinct Laplace mechanisms take ~3 s to build and convolve.
constexpr int kMaxEvents = 1000;
constexpr int kMaxPldEvents = 100;
constexpr size_t kMaxEventSpecLength = 256;

// Accountants that can price a Poisson-subsampled Gaussian (basic and advanced compose pure or
// (epsilon, delta) events only).
bool CanCalibrate(absl::string_view accountant) {
  return accountant == "rdp" || accountant == "zcdp" || accountant == "pld";
}

absl::Status ValidateAccountantName(absl::string_view accountant) {
  if (accountant.empty()) {
    return absl::InvalidArgumentError(
        "accountant is required: basic, advanced, rdp, zcdp or pld");
  }
  // CreateAccountant owns the list of names; its message already says "accountant must be ...".
  return acc::CreateAccountant(accountant).status();
}

// The computation cannot be interrupted, so the deadline is checked before and after it: a caller
// that gave up never gets an answer computed past its deadline (and none is needed: nothing was
// charged).
absl::Status CheckDeadline(const grpc::ServerContext& context) {
  if (std::chrono::system_clock::now() >= context.deadline()) {
    return absl::DeadlineExceededError("the call's deadline passed during the computation");
  }
  if (context.IsCancelled()) return absl::CancelledError("the call was cancelled");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<acc::PrivacyEvent>> ParseEvents(
    const google::protobuf::RepeatedPtrField<std::string>& specs) {
  if (specs.empty()) {
    return absl::InvalidArgumentError(
        "events must list at least one event, e.g. laplace:scale=10,count=100");
  }
  if (specs.size() > kMaxEvents) {
    return absl::InvalidArgumentError(absl::StrCat("events: at most ", kMaxEvents,
                                                   " event specs per request, got ", specs.size(),
                                                   " (use count=N to repeat one mechanism)"));
  }
  std::vector<acc::PrivacyEvent> events;
  events.reserve(specs.size());
  for (int i = 0; i < specs.size(); ++i) {
    const std::string& spec = specs.Get(i);
    if (spec.size() > kMaxEventSpecLength) {
      return absl::InvalidArgumentError(absl::StrCat("events[", i, "]: spec longer than ",
                                                     kMaxEventSpecLength, " characters"));
    }
    absl::StatusOr<acc::PrivacyEvent> event = acc::ParsePrivacyEvent(spec);
    if (!event.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("events[", i, "] ", QuoteForMessage(spec), ": ", event.status().message()));
    }
    events.push_back(*event);
  }
  return events;
}

// Messages of PriceEvents that come from composing (an event the accountant cannot represent)
// do not say which request field they concern; prefix "events: " so the field is named.
absl::Status NameEventsField(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  const absl::string_view message = status.message();
  for (absl::string_view field : {"accountant", "delta", "events"}) {
    if (absl::StartsWith(message, field)) return status;
  }
  absl::string_view rest = message;
  absl::ConsumePrefix(&rest, "event: ");
  return absl::InvalidArgumentError(absl::StrCat("events: ", rest));
}

}  // namespace

grpc::Status AccountingService::Price(grpc::ServerContext* context, const v1::PriceRequest* request,
                                      v1::PriceResponse* response) {
  absl::Status status = [&]() -> absl::Status {
    // Any role may price: only the caller's identity is checked.
    RETURN_IF_ERROR(o_.auth->Authenticate(*context).status());
    RETURN_IF_ERROR(ValidateAccountantName(request->accountant()));
    RETURN_IF_ERROR(ValidateInOpenRange(request->delta(), 0.0, 1.0, "delta"));
    ASSIGN_OR_RETURN(std::vector<acc::PrivacyEvent> events, ParseEvents(request->events()));
    if (request->accountant() == "pld" && static_cast<int>(events.size()) > kMaxPldEvents) {
      return absl::ResourceExhaustedError(
          absl::StrCat("events: the pld accountant prices at most ", kMaxPldEvents,
                       " event specs per request, got ", events.size(),
                       " (merge repeats with count=N)"));
    }
    RETURN_IF_ERROR(CheckDeadline(*context));
    absl::StatusOr<acc::Price> price =
        acc::PriceEvents(request->accountant(), request->delta(), events);
    if (!price.ok()) return NameEventsField(price.status());
    RETURN_IF_ERROR(CheckDeadline(*context));
    response->set_epsilon(price->epsilon);  // +inf when no finite epsilon holds at this delta
    response->set_delta(price->delta);
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
    RETURN_IF_ERROR(o_.auth->Authenticate(*context).status());
    RETURN_IF_ERROR(ValidateAccountantName(request->accountant()));
    if (!CanCalibrate(request->accountant())) {
      return absl::InvalidArgumentError(
          absl::StrCat("accountant must be rdp, zcdp or pld for calibration, got '",
                       request->accountant(),
                       "' (basic and advanced cannot account for the subsampled Gaussian)"));
    }
    RETURN_IF_ERROR(ValidateIsPositive(request->target_epsilon(), "target_epsilon"));
    RETURN_IF_ERROR(ValidateInOpenRange(request->delta(), 0.0, 1.0, "delta"));
    const double q = request->q();
    if (!(q > 0 && q <= 1)) {  // also rejects NaN
      return absl::InvalidArgumentError(absl::StrCat("q must be in (0, 1], got ", q));
    }
    const int64_t steps = request->steps();
    if (steps < 1 || steps > acc::kMaxEventCount) {
      return absl::InvalidArgumentError(
          absl::StrCat("steps must be in [1, ", acc::kMaxEventCount, "], got ", steps));
    }
    RETURN_IF_ERROR(CheckDeadline(*context));
    ASSIGN_OR_RETURN(double z, acc::CalibrateNoiseMultiplier(request->accountant(),
                                                             request->target_epsilon(),
                                                             request->delta(), q, steps));
    // Report what z actually achieves, priced by the same accountant (<= target_epsilon by the
    // contract of CalibrateNoiseMultiplier, which rounds z up).
    const acc::PrivacyEvent step = acc::PrivacyEvent::PoissonSubsampledGaussian(q, z, steps);
    ASSIGN_OR_RETURN(acc::Price price, acc::PriceEvents(request->accountant(), request->delta(),
                                                        absl::MakeConstSpan(&step, 1)));
    RETURN_IF_ERROR(CheckDeadline(*context));
    response->set_noise_multiplier(z);
    response->set_epsilon(price.epsilon);
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

}  // namespace dpq::api
