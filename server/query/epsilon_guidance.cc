#include "server/query/epsilon_guidance.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/base/validation.h"

namespace dpq::query {
namespace {

EpsilonPreset PresetOrDefault(absl::string_view preset) {
  absl::StatusOr<EpsilonPreset> found = FindEpsilonPreset(preset);
  return found.ok() ? *found : DefaultEpsilonRange();
}

std::string RangeText(const EpsilonPreset& p) {
  return absl::StrFormat("%g-%g for %s", p.lower, p.upper, p.name);
}

}  // namespace

const std::vector<EpsilonPreset>& EpsilonPresets() {
  static const auto* presets = new std::vector<EpsilonPreset>{
      {"census", 0.1, 1},  {"healthcare", 0.5, 2}, {"location", 1, 3},
      {"analytics", 1, 5}, {"ab-testing", 2, 8},   {"public-statistics", 0.5, 3},
  };
  return *presets;
}

absl::StatusOr<EpsilonPreset> FindEpsilonPreset(absl::string_view name) {
  std::vector<std::string> names;
  for (const EpsilonPreset& p : EpsilonPresets()) {
    if (p.name == name) return p;
    names.push_back(p.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "preset must be one of ", absl::StrJoin(names, ", "), "; got ", QuoteForMessage(name)));
}

EpsilonPreset DefaultEpsilonRange() { return {"any domain", 0.1, 8}; }

std::vector<std::string> BudgetWarnings(double epsilon_total, absl::string_view preset) {
  const EpsilonPreset p = PresetOrDefault(preset);
  if (epsilon_total < p.lower) {
    return {
        absl::StrFormat("epsilon %g is below the usual range %s: answers may be too noisy to use",
                        epsilon_total, RangeText(p))};
  }
  if (epsilon_total > p.upper) {
    return {absl::StrFormat("epsilon %g is above the usual range %s: weaker privacy than usual",
                            epsilon_total, RangeText(p))};
  }
  return {};
}

std::vector<std::string> QueryWarnings(double epsilon, absl::string_view preset) {
  const EpsilonPreset p = PresetOrDefault(preset);
  if (epsilon > p.upper) {
    return {absl::StrFormat(
        "this query's epsilon %g is above the usual total budget range %s: weaker privacy than usual",
        epsilon, RangeText(p))};
  }
  return {};
}

}  // namespace dpq::query
