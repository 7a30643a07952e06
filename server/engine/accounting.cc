// No accounting math here: prices come from PriceEvents and noise multipliers from
// CalibrateNoiseMultiplier (server/dp/accounting/accountant.h); this checks each request field
// (messages name it) and bounds the work one request may ask for.
#include "server/engine/accounting.h"

#include <cstddef>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/dp/accounting/privacy_event.h"

namespace dpq::engine {
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
bool CanCalibrate(acc::AccountantKind kind) {
  return kind == acc::AccountantKind::kRdp || kind == acc::AccountantKind::kZcdp ||
         kind == acc::AccountantKind::kPld;
}

// The request's accountant; its message already says "accountant must be ..." for an unknown one.
absl::StatusOr<acc::AccountantKind> RequestAccountant(absl::string_view accountant) {
  if (accountant.empty()) {
    return absl::InvalidArgumentError("accountant is required: basic, advanced, rdp, zcdp or pld");
  }
  return acc::ParseAccountantKind(accountant);
}

absl::StatusOr<std::vector<acc::PrivacyEvent>> ParseEvents(const std::vector<std::string>& specs) {
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
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& spec = specs[i];
    if (spec.size() > kMaxEventSpecLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("events[", i, "]: spec longer than ", kMaxEventSpecLength, " characters"));
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

absl::StatusOr<acc::AccountantKind> ValidateCalibration(const std::string& accountant,
                                                        double target_epsilon, double delta,
                                                        double q, int64_t steps) {
  ASSIGN_OR_RETURN(const acc::AccountantKind kind, RequestAccountant(accountant));
  if (!CanCalibrate(kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("accountant must be rdp, zcdp or pld for calibration, got '", accountant,
                     "' (basic and advanced cannot account for the subsampled Gaussian)"));
  }
  RETURN_IF_ERROR(ValidateIsPositive(target_epsilon, "target_epsilon"));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  if (!(q > 0 && q <= 1)) {  // also rejects NaN
    return absl::InvalidArgumentError(absl::StrCat("q must be in (0, 1], got ", q));
  }
  if (steps < 1 || steps > acc::kMaxEventCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps must be in [1, ", acc::kMaxEventCount, "], got ", steps));
  }
  return kind;
}

}  // namespace

absl::StatusOr<acc::Price> Accounting::Price(const std::string& accountant, double delta,
                                             const std::vector<std::string>& event_specs,
                                             const StillWanted& still_wanted) const {
  ASSIGN_OR_RETURN(const acc::AccountantKind kind, RequestAccountant(accountant));
  RETURN_IF_ERROR(ValidateInOpenRange(delta, 0.0, 1.0, "delta"));
  ASSIGN_OR_RETURN(std::vector<acc::PrivacyEvent> events, ParseEvents(event_specs));
  if (kind == acc::AccountantKind::kPld && static_cast<int>(events.size()) > kMaxPldEvents) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "events: the pld accountant prices at most ", kMaxPldEvents,
        " event specs per request, got ", events.size(), " (merge repeats with count=N)"));
  }
  RETURN_IF_ERROR(still_wanted());
  absl::StatusOr<acc::Price> price = acc::PriceEvents(kind, delta, events);
  if (!price.ok()) return NameEventsField(price.status());
  RETURN_IF_ERROR(still_wanted());
  return price;
}

absl::StatusOr<Calibration> Accounting::Calibrate(const std::string& accountant,
                                                  double target_epsilon, double delta, double q,
                                                  int64_t steps,
                                                  const StillWanted& still_wanted) const {
  ASSIGN_OR_RETURN(const acc::AccountantKind kind,
                   ValidateCalibration(accountant, target_epsilon, delta, q, steps));
  RETURN_IF_ERROR(still_wanted());
  Calibration calibration;
  ASSIGN_OR_RETURN(calibration.noise_multiplier,
                   acc::CalibrateNoiseMultiplier(kind, target_epsilon, delta, q, steps));
  // Report what z actually achieves, priced by the same accountant (<= target_epsilon by the
  // contract of CalibrateNoiseMultiplier, which rounds z up).
  const acc::PrivacyEvent step =
      acc::PrivacyEvent::PoissonSubsampledGaussian(q, calibration.noise_multiplier, steps);
  ASSIGN_OR_RETURN(acc::Price price, acc::PriceEvents(kind, delta, absl::MakeConstSpan(&step, 1)));
  RETURN_IF_ERROR(still_wanted());
  calibration.epsilon = price.epsilon;
  return calibration;
}

}  // namespace dpq::engine
