// QueryEngine::PlanAccuracy: the error of a query at an epsilon, or the epsilon for an error,
// from the plan and the calibrated mechanisms alone (no scan, no charge).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/dp/dp_quantile.h"
#include "server/engine/noisy_release.h"
#include "server/engine/plan_report.h"
#include "server/engine/query_engine.h"
#include "server/query/epsilon_guidance.h"

namespace dpq::engine {
namespace {

struct Accuracy {
  double sensitivity = 0, noise_scale = 0, error = 0;
};

// The first component's interval half-width (mean/variance: divided by expected_count), or a
// quantile's rank error bound; the noise scale and sensitivity are those the run reports
// (SummaryComponent): a quantile's are its noisy histogram's.
absl::StatusOr<Accuracy> AccuracyOf(const query::QueryPlan& plan,
                                    const std::vector<Calibrated>& calibrated,
                                    double expected_count) {
  Accuracy out;
  if (plan.components.empty()) return out;  // keys only: no statistic, no error to report
  const size_t summary = SummaryComponent(plan);
  out.sensitivity = plan.components.at(summary).sensitivity;
  out.noise_scale = calibrated.at(summary).mechanism->noise_scale();
  if (plan.spec.aggregate == query::AggregateKind::kQuantile) {
    // The largest rank-error bound over the requested levels, exactly as the release reports it.
    // The band (dozens of Chernoff optimisations per level) only when the values come from it.
    std::optional<dp::QuantileBand> band;
    if (plan.quantile_epsilon == 0) {
      ASSIGN_OR_RETURN(band, QuantileBandOf(plan, *calibrated.at(0).mechanism));
    }
    for (size_t i = 0; i < plan.spec.quantiles.size(); ++i) {
      ASSIGN_OR_RETURN(double e, QuantileRankError(plan, band ? &*band : nullptr, i));
      out.error = std::max(out.error, e);
    }
    return out;
  }
  out.error = calibrated.at(0).half_width;  // exactly what the query itself will report
  if (plan.components.size() > 1 && expected_count > 0) out.error /= expected_count;
  return out;
}

}  // namespace

absl::StatusOr<AccuracyPlan> QueryEngine::PlanAccuracy(const store::Principal& principal,
                                                       const query::QuerySpec& spec_in,
                                                       double target_error, double expected_count) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, SchemaFor(principal, spec_in));
  if (!(expected_count >= 0) || !std::isfinite(expected_count)) {
    return absl::InvalidArgumentError("expected_count must be finite and >= 0");
  }
  query::QuerySpec spec = spec_in;
  const auto error_at = [&](double epsilon) -> absl::StatusOr<AccuracyPlan> {
    query::QuerySpec s = spec;
    s.epsilon = epsilon;
    ASSIGN_OR_RETURN(Prepared q, Prepare(s, schema, /*with_release=*/false));
    ASSIGN_OR_RETURN(std::vector<Calibrated> calibrated, CalibrateComponents(q.plan));
    ASSIGN_OR_RETURN(Accuracy acc, AccuracyOf(q.plan, calibrated, expected_count));
    AccuracyPlan out;
    out.epsilon = q.plan.spec.epsilon;
    out.delta = q.plan.spec.delta;
    out.mechanism = q.plan.spec.mechanism;
    out.sensitivity = acc.sensitivity;
    out.noise_scale = acc.noise_scale;
    out.error = acc.error;
    out.confidence = q.plan.spec.confidence;
    out.rank_error = q.plan.spec.aggregate == query::AggregateKind::kQuantile;
    out.report = ReportOf(q.plan, calibrated, spec);
    return out;
  };
  AccuracyPlan result;
  if (spec.epsilon > 0) {
    ASSIGN_OR_RETURN(result, error_at(spec.epsilon));
  } else {
    if (!(target_error > 0) || !std::isfinite(target_error)) {
      return absl::InvalidArgumentError(
          "give epsilon (> 0) to learn the error, or target_error (> 0) to learn the epsilon");
    }
    // The error falls as epsilon grows: bisect on a log scale between the smallest and the
    // largest epsilon a query may spend.
    double lo = 1e-6, hi = 1e6;
    ASSIGN_OR_RETURN(AccuracyPlan at_hi, error_at(hi));
    if (at_hi.error > target_error) {
      return absl::OutOfRangeError(
          absl::StrFormat("no epsilon up to 1e6 gives an error of %g or less (at 1e6: %g)",
                          target_error, at_hi.error));
    }
    ASSIGN_OR_RETURN(AccuracyPlan at_lo, error_at(lo));
    if (at_lo.error <= target_error) {
      result = at_lo;
    } else {
      for (int i = 0; i < 100 && hi / lo > 1 + 1e-12; ++i) {
        const double mid = std::sqrt(lo * hi);
        ASSIGN_OR_RETURN(AccuracyPlan m, error_at(mid));
        (m.error <= target_error ? hi : lo) = mid;
      }
      // Round up to the ledger's 1e-12 units so the planned epsilon is one a query can spend.
      const double units = std::ceil(hi * 1e12);
      ASSIGN_OR_RETURN(result, error_at(units / 1e12));
    }
  }
  result.warnings = query::QueryWarnings(result.epsilon, schema.epsilon_preset);
  return result;
}

}  // namespace dpq::engine
