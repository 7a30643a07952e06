// Epsilon guidance: the ranges of total epsilon that deployed DP releases in each domain usually
// use, as domain presets for `dpqctl budget set --preset`, and warnings (never errors) for budgets
// and queries outside them. The ranges are the project's guidance, in line with published
// deployments surveyed by Desfontaines, "A list of real-world uses of differential privacy" (2021):
// e.g. the 2020 US Census redistricting data used a total of about 17 (far above the usual census
// range, which is why it drew comment), while most analytics deployments sit between 1 and 5.
#ifndef DPQ_SERVER_QUERY_EPSILON_GUIDANCE_H_
#define DPQ_SERVER_QUERY_EPSILON_GUIDANCE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dpq::query {

struct EpsilonPreset {
  std::string name;
  double lower = 0;  // usual total epsilon of a release in this domain
  double upper = 0;
};

// census 0.1-1, healthcare 0.5-2, location 1-3, analytics 1-5, ab-testing 2-8,
// public-statistics 0.5-3.
const std::vector<EpsilonPreset>& EpsilonPresets();

// INVALID_ARGUMENT naming "preset" and the known names for an unknown name.
absl::StatusOr<EpsilonPreset> FindEpsilonPreset(absl::string_view name);

// The widest usual range (0.1-8), used when a dataset has no preset.
EpsilonPreset DefaultEpsilonRange();

// A warning when a dataset's total budget lies outside its preset's range (or the default range
// when `preset` is empty); empty when it is inside.
std::vector<std::string> BudgetWarnings(double epsilon_total, absl::string_view preset);

// A warning when ONE query spends more than the upper end of the range: small queries are normal
// (a budget is split over many), a single query above the whole usual budget is not.
std::vector<std::string> QueryWarnings(double epsilon, absl::string_view preset);

}  // namespace dpq::query

#endif  // DPQ_SERVER_QUERY_EPSILON_GUIDANCE_H_
