// What a query's plan will release and how, stated without any data: every noise component's
// mechanism and scale, how quantiles are chosen, where the released group keys come from, and
// the per-row expression the value reads. Explain (ExplainSql, Plan) and the run's report are
// built from the same function, so what explain says is what the run uses.
#ifndef DPQ_SERVER_ENGINE_PLAN_REPORT_H_
#define DPQ_SERVER_ENGINE_PLAN_REPORT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/engine/noisy_release.h"
#include "server/query/planner.h"

namespace dpq::engine {

// One calibrated noise component (query::NoiseComponent and its mechanism).
struct ComponentReport {
  query::NoiseComponent::Statistic statistic = query::NoiseComponent::Statistic::kCount;
  query::MechanismKind mechanism = query::MechanismKind::kLaplace;
  double epsilon = 0;
  double delta = 0;
  double sensitivity = 0;
  double noise_scale = 0;  // Laplace b or Gaussian sigma
};
absl::string_view StatisticName(query::NoiseComponent::Statistic statistic);  // "sum_squares", ...

// QUANTILE plans: with at most query::kMaxSelectedQuantiles levels the exponential mechanism
// chooses the values (selection_epsilon per group, QueryPlan::quantile_epsilon) and the noisy
// histogram (components[0]) gives the intervals; with more, the values are read off that
// histogram's CDF (selection_epsilon 0).
struct QuantileReport {
  bool planned = false;  // a quantile plan
  bool exponential = false;
  double selection_epsilon = 0;
};

// Where a grouped release's keys come from: the declared list (every key released), or DP
// partition selection from the data at (epsilon, delta) with at most max_partitions groups a unit.
struct KeysReport {
  enum class Source { kUngrouped, kDeclared, kSelected };
  Source source = Source::kUngrouped;
  std::vector<std::vector<std::string>> declared;
  double selection_epsilon = 0;
  double selection_delta = 0;
  int max_partitions = 1;
};
absl::string_view KeySourceName(KeysReport::Source source);  // "none", "declared", "selected"

// The per-row expression a part's value reads (ScanPlan::value_expression), its clamp bounds and
// whether they were derived from declared bounds (with the derivation's lines) or given.
struct ExpressionReport {
  bool present = false;
  std::string canonical;
  double clamp_lower = 0;
  double clamp_upper = 0;
  bool derived = false;
  std::vector<std::string> derivation;
  bool counted_only = false;  // a count: read for its NULL test only, no clamp
};

struct PlanReport {
  std::vector<ComponentReport> components;  // in plan.components' order
  QuantileReport quantile;
  KeysReport keys;
  ExpressionReport value_expression;
};

// A joined script's source (DatasetSchema::join), as explain states it with the names the
// statement writes: the tables in FROM order, the condition joining each to an earlier one, the
// privacy unit every joined row belongs to, and where contribution bounding happens.
struct JoinReport {
  struct Table {
    std::string dataset;
    std::string alias;
    bool is_public = false;
  };
  bool present = false;
  std::vector<Table> tables;
  std::vector<std::string> conditions;  // conditions[i] joins tables[i + 1]: "v.pid = p.pid"
  std::string privacy_unit;             // "p.pid"
  std::string bounding;
};
// Empty (present false) for a schema without a join.
JoinReport JoinReportOf(const query::DatasetSchema& joined);

// `calibrated` holds one mechanism per plan.components (as ReleasePlan::components); `asked` is
// the query as given (before the planner resolved its bounds): its bounds, when both are set,
// were given rather than derived.
PlanReport ReportOf(const query::QueryPlan& plan, const std::vector<Calibrated>& calibrated,
                    const query::QuerySpec& asked);

// The components alone (what a run reports beside its values).
std::vector<ComponentReport> ComponentsOf(const query::QueryPlan& plan,
                                          const std::vector<Calibrated>& calibrated);

// Calibrates every component of `plan` as the release does (ComponentConfidence), no data.
absl::StatusOr<std::vector<Calibrated>> CalibrateComponents(const query::QueryPlan& plan);

// The scale and sensitivity a run reports as its summary (QueryResponse.noise_scale and
// sensitivity): the count's (COUNT), the sum's (SUM, MEAN), the sum of squares' (VAR_POP,
// STDDEV_POP), the histogram's (HISTOGRAM, QUANTILE). Both from the same component.
size_t SummaryComponent(const query::QueryPlan& plan);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_PLAN_REPORT_H_
