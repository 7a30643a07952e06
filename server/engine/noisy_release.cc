#include "server/engine/noisy_release.h"

#include <algorithm>
#include <memory>

#include "server/base/status_macros.h"
#include "server/dp/accounting/privacy_event.h"
#include "server/dp/additive_mechanism.h"

namespace dpq::engine {
namespace {

using query::NoiseComponent;

absl::StatusOr<std::unique_ptr<dp::AdditiveMechanism>> MechanismFor(query::MechanismKind kind,
                                                                    const NoiseComponent& c) {
  if (kind == query::MechanismKind::kGaussian) {
    return dp::CreateGaussianMechanism(c.epsilon, c.delta, c.sensitivity);
  }
  return dp::CreateLaplaceMechanism(c.epsilon, c.sensitivity);
}

struct Component {
  double value;
  double half_width;
  double scale;
  double sensitivity;
  std::string event;
};

std::string EventOf(const dp::AdditiveMechanism& m) {
  if (m.delta() > 0) {
    return dp::accounting::PrivacyEvent::Gaussian(m.noise_scale(), m.privacy_sensitivity()).ToSpec();
  }
  return dp::accounting::PrivacyEvent::PureDp(m.epsilon()).ToSpec();
}

absl::StatusOr<Component> Release(query::MechanismKind kind, const NoiseComponent& c, double exact,
                                  double confidence, dp::RandomSource& rng) {
  ASSIGN_OR_RETURN(auto mechanism, MechanismFor(kind, c));
  ASSIGN_OR_RETURN(double value, mechanism->AddNoise(exact, rng));
  ASSIGN_OR_RETURN(double half_width, mechanism->ConfidenceHalfWidth(confidence));
  return Component{value, half_width, mechanism->noise_scale(), mechanism->sensitivity(),
                   EventOf(*mechanism)};
}

double ExactStatistic(const NoiseComponent& c, const store::ScanResult& exact) {
  return c.statistic == NoiseComponent::Statistic::kCount ? static_cast<double>(exact.count)
                                                          : exact.sum;
}

}  // namespace

absl::StatusOr<NoisyRelease> ReleaseWithNoise(const query::QueryPlan& plan,
                                              const store::ScanResult& exact, dp::RandomSource& rng) {
  const query::QuerySpec& spec = plan.spec;
  NoisyRelease out;
  if (spec.aggregate != query::AggregateKind::kMean) {
    const NoiseComponent& c = plan.components.at(0);
    ASSIGN_OR_RETURN(Component r,
                     Release(spec.mechanism, c, ExactStatistic(c, exact), spec.confidence, rng));
    out.value = r.value;
    out.noise_scale = r.scale;
    out.sensitivity = r.sensitivity;
    out.ci_lower = r.value - r.half_width;
    out.ci_upper = r.value + r.half_width;
    out.events = {r.event};
    return out;
  }

  // Mean: each of the two intervals at level 1 - (1 - confidence) / 2, so both hold together with
  // probability >= confidence (Bonferroni); the mean's interval is then the range of
  // centre + S / C over that box, which is monotone in S and C, clipped to [lower, upper].
  const double per_component = 1 - (1 - spec.confidence) / 2;
  ASSIGN_OR_RETURN(Component sum, Release(spec.mechanism, plan.components.at(0),
                                          ExactStatistic(plan.components.at(0), exact),
                                          per_component, rng));
  ASSIGN_OR_RETURN(Component count, Release(spec.mechanism, plan.components.at(1),
                                            ExactStatistic(plan.components.at(1), exact),
                                            per_component, rng));
  const double lo = *spec.lower;
  const double hi = *spec.upper;
  const double center = plan.scan.center;
  // Post-processing of the two noisy values (free under DP): a count below one is treated as one,
  // and the mean is clamped into the public range.
  out.value = std::clamp(center + sum.value / std::max(count.value, 1.0), lo, hi);
  out.noise_scale = sum.scale;
  out.count_noise_scale = count.scale;
  out.sensitivity = sum.sensitivity;
  out.events = {sum.event, count.event};
  const double c_lo = count.value - count.half_width;
  const double c_hi = count.value + count.half_width;
  const double s_lo = sum.value - sum.half_width;
  const double s_hi = sum.value + sum.half_width;
  if (c_lo < 1) {
    // The count's interval reaches below one row: the ratio is unbounded, so only the public range
    // is a valid interval.
    out.ci_lower = lo;
    out.ci_upper = hi;
  } else {
    const double candidates[] = {s_lo / c_lo, s_lo / c_hi, s_hi / c_lo, s_hi / c_hi};
    out.ci_lower = std::clamp(center + *std::min_element(std::begin(candidates), std::end(candidates)), lo, hi);
    out.ci_upper = std::clamp(center + *std::max_element(std::begin(candidates), std::end(candidates)), lo, hi);
  }
  return out;
}

}  // namespace dpq::engine
