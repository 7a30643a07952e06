#include "server/dp/accounting/privacy_event.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::dp::accounting {
namespace {

std::string Num(double v) { return absl::StrFormat("%.17g", v); }

absl::Status ValidateCount(int64_t count) {
  if (count < 1 || count > kMaxEventCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("count must be in [1, ", kMaxEventCount, "], got ", count));
  }
  return absl::OkStatus();
}

}  // namespace

PrivacyEvent PrivacyEvent::Laplace(double scale, double l1_sensitivity, int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kLaplace;
  e.scale = scale;
  e.sensitivity = l1_sensitivity;
  e.count = count;
  return e;
}

PrivacyEvent PrivacyEvent::Gaussian(double sigma, double l2_sensitivity, int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kGaussian;
  e.sigma = sigma;
  e.sensitivity = l2_sensitivity;
  e.count = count;
  return e;
}

PrivacyEvent PrivacyEvent::PoissonSubsampledGaussian(double sampling_rate, double noise_multiplier,
                                                     int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kPoissonSubsampledGaussian;
  e.sampling_rate = sampling_rate;
  e.noise_multiplier = noise_multiplier;
  e.count = count;
  return e;
}

PrivacyEvent PrivacyEvent::PureDp(double epsilon, int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kPureDp;
  e.epsilon = epsilon;
  e.count = count;
  return e;
}

PrivacyEvent PrivacyEvent::ApproxDp(double epsilon, double delta, int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kApproxDp;
  e.epsilon = epsilon;
  e.delta = delta;
  e.count = count;
  return e;
}

PrivacyEvent PrivacyEvent::DiscreteLaplace(double scale_steps, int64_t sensitivity_steps,
                                           int64_t count) {
  PrivacyEvent e;
  e.kind = EventKind::kDiscreteLaplace;
  e.scale = scale_steps;
  // Exact for sensitivity_steps <= 2^53. Above it the conversion would round (2^53 + 1 -> 2^53,
  // silently smaller), so store +inf, which Validate rejects.
  e.sensitivity = sensitivity_steps > int64_t{1} << 53 ? std::numeric_limits<double>::infinity()
                                                       : static_cast<double>(sensitivity_steps);
  e.count = count;
  return e;
}

absl::Status PrivacyEvent::Validate() const {
  RETURN_IF_ERROR(ValidateCount(count));
  switch (kind) {
    case EventKind::kLaplace:
      RETURN_IF_ERROR(ValidateIsPositive(scale, "scale"));
      return ValidateIsPositive(sensitivity, "sensitivity");
    case EventKind::kGaussian:
      RETURN_IF_ERROR(ValidateIsPositive(sigma, "sigma"));
      return ValidateIsPositive(sensitivity, "sensitivity");
    case EventKind::kPoissonSubsampledGaussian:
      RETURN_IF_ERROR(ValidateIsPositive(sampling_rate, "sampling_rate"));
      if (sampling_rate > 1.0) return absl::InvalidArgumentError("sampling_rate must be in (0, 1]");
      return ValidateIsPositive(noise_multiplier, "noise_multiplier");
    case EventKind::kPureDp: return ValidateIsNonNegative(epsilon, "epsilon");
    case EventKind::kApproxDp:
      RETURN_IF_ERROR(ValidateIsNonNegative(epsilon, "epsilon"));
      return ValidateInHalfOpenRange(delta, 0.0, 1.0, "delta");
    case EventKind::kDiscreteLaplace:
      RETURN_IF_ERROR(ValidateIsPositive(scale, "scale"));
      // Written so that NaN and +-inf fail too.
      if (!(sensitivity >= 1 && sensitivity <= kMaxDiscreteLaplaceSensitivity &&
            sensitivity == std::floor(sensitivity))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sensitivity of a discrete Laplace event must be an integer number of grid steps in "
            "[1, 2^53], got ",
            Num(sensitivity)));
      }
      if (!std::isfinite(sensitivity / scale)) {
        return absl::InvalidArgumentError("scale is too small: sensitivity / scale overflows");
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("unknown event kind");
}

bool PrivacyEvent::SameMechanism(const PrivacyEvent& o) const {
  return kind == o.kind && scale == o.scale && sensitivity == o.sensitivity && sigma == o.sigma &&
         sampling_rate == o.sampling_rate && noise_multiplier == o.noise_multiplier &&
         epsilon == o.epsilon && delta == o.delta;
}

std::string PrivacyEvent::ToSpec() const {
  std::string s;
  switch (kind) {
    case EventKind::kLaplace:
      s = absl::StrCat("laplace:scale=", Num(scale), ",sensitivity=", Num(sensitivity));
      break;
    case EventKind::kGaussian:
      s = absl::StrCat("gaussian:sigma=", Num(sigma), ",sensitivity=", Num(sensitivity));
      break;
    case EventKind::kPoissonSubsampledGaussian:
      s = absl::StrCat("subsampled-gaussian:q=", Num(sampling_rate),
                       ",sigma=", Num(noise_multiplier));
      break;
    case EventKind::kPureDp: s = absl::StrCat("pure:epsilon=", Num(epsilon)); break;
    case EventKind::kApproxDp:
      s = absl::StrCat("approx:epsilon=", Num(epsilon), ",delta=", Num(delta));
      break;
    case EventKind::kDiscreteLaplace:
      s = absl::StrCat("discrete-laplace:scale=", Num(scale), ",sensitivity=", Num(sensitivity));
      break;
  }
  return absl::StrCat(s, ",count=", count);
}

absl::StatusOr<PrivacyEvent> ParsePrivacyEvent(absl::string_view spec) {
  std::vector<absl::string_view> head = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (head.size() != 2) {
    return absl::InvalidArgumentError("event spec must look like KIND:key=value,...");
  }
  PrivacyEvent e;
  const absl::string_view kind = head[0];
  // Which keys each kind accepts, and where they go.
  struct Key {
    absl::string_view name;
    double* target;
    bool required;
  };
  std::vector<Key> keys;
  keys.reserve(2);
  if (kind == "laplace") {
    e.kind = EventKind::kLaplace;
    keys.push_back({"scale", &e.scale, true});
    keys.push_back({"sensitivity", &e.sensitivity, false});
  } else if (kind == "gaussian") {
    e.kind = EventKind::kGaussian;
    keys.push_back({"sigma", &e.sigma, true});
    keys.push_back({"sensitivity", &e.sensitivity, false});
  } else if (kind == "subsampled-gaussian") {
    e.kind = EventKind::kPoissonSubsampledGaussian;
    keys.push_back({"q", &e.sampling_rate, true});
    keys.push_back({"sigma", &e.noise_multiplier, true});
  } else if (kind == "pure") {
    e.kind = EventKind::kPureDp;
    keys.push_back({"epsilon", &e.epsilon, true});
  } else if (kind == "approx") {
    e.kind = EventKind::kApproxDp;
    keys.push_back({"epsilon", &e.epsilon, true});
    keys.push_back({"delta", &e.delta, true});
  } else if (kind == "discrete-laplace") {
    e.kind = EventKind::kDiscreteLaplace;
    keys.push_back({"scale", &e.scale, true});
    keys.push_back({"sensitivity", &e.sensitivity, true});
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown event kind '", kind,
        "' (expected laplace, gaussian, subsampled-gaussian, pure, approx or discrete-laplace)"));
  }
  std::vector<bool> seen(keys.size(), false);
  bool seen_count = false;
  for (absl::string_view kv : absl::StrSplit(head[1], ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (parts.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected key=value in event spec, got '", kv, "'"));
    }
    if (parts[0] == "count") {
      int64_t c = 0;
      if (seen_count || !absl::SimpleAtoi(parts[1], &c)) {
        return absl::InvalidArgumentError("count must be a positive integer given once");
      }
      e.count = c;
      seen_count = true;
      continue;
    }
    bool matched = false;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].name != parts[0]) continue;
      double v = 0;
      if (seen[i] || !absl::SimpleAtod(parts[1], &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(keys[i].name, " must be a number given once, got '", parts[1], "'"));
      }
      *keys[i].target = v;
      seen[i] = matched = true;
    }
    if (!matched) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown key '", parts[0], "' for event kind ", kind));
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].required && !seen[i]) {
      return absl::InvalidArgumentError(absl::StrCat(kind, " event needs ", keys[i].name));
    }
  }
  RETURN_IF_ERROR(e.Validate());
  return e;
}

}  // namespace dpq::dp::accounting
