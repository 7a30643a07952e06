#include "server/dp/accounting/zcdp.h"

#include <limits>

namespace dpq::dp::accounting {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

double EventRho(const PrivacyEvent& e) {
  switch (e.kind) {
    case EventKind::kGaussian:
    case EventKind::kPoissonSubsampledGaussian: {
      const double z = e.GaussianNoiseMultiplier();
      return 1 / (2 * z * z);
    }
    case EventKind::kLaplace: return e.LaplaceEpsilon() * e.LaplaceEpsilon() / 2;
    case EventKind::kDiscreteLaplace:
      // Pure (D/T)-DP => (D/T)^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4). No tighter rho is claimed:
      // sup_a D_a / a of the discrete pair is not known here in closed form.
      return e.DiscreteLaplaceEpsilon() * e.DiscreteLaplaceEpsilon() / 2;
    case EventKind::kPureDp: return e.epsilon * e.epsilon / 2;
    case EventKind::kApproxDp: return e.delta == 0 ? e.epsilon * e.epsilon / 2 : kInf;
  }
  return kInf;
}

}  // namespace dpq::dp::accounting
