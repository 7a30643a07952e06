// What a plan will release and how (PlanResponse / SqlPlanPart: noise components, a quantile's
// method, the released keys, the value's per-row expression), as JSON and as indented lines; and
// a run's noise components.
#ifndef DPQ_CLIENT_DPQCTL_PLAN_REPORT_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_PLAN_REPORT_OUTPUT_H_

#include <ostream>
#include <string>

#include "dpq/v1/dpq.pb.h"
#include "google/protobuf/repeated_field.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

using NoiseComponents = google::protobuf::RepeatedPtrField<dpq::v1::NoiseComponent>;

// [{"statistic", "mechanism", "epsilon", "delta", "sensitivity", "noise_scale"}, ...]
nlohmann::json NoiseComponentsToJson(const NoiseComponents& components);

// The report fields PlanResponse and SqlPlanPart share.
struct PlanReportView {
  const NoiseComponents* components = nullptr;
  const dpq::v1::QuantileMethod* quantile = nullptr;  // null: not a quantile
  const dpq::v1::ReleasedKeys* keys = nullptr;
  const dpq::v1::ValueExpression* value_expression = nullptr;  // null: a plain column
};
PlanReportView ReportOf(const dpq::v1::PlanResponse& response);
PlanReportView ReportOf(const dpq::v1::SqlPlanPart& part);

// Adds "components", "quantile" (method, epsilon), "keys" (source, keys or the selection's
// epsilon/delta/max_partitions) and "value_expression" (canonical, lower, upper, derived,
// derivation) to `out`; absent parts are left out.
void AddPlanReportJson(const PlanReportView& report, nlohmann::json& out);

// Lines, each prefixed by `indent` and newline-terminated: the noise table (STATISTIC,
// MECHANISM, EPSILON, DELTA, SENSITIVITY, NOISE SCALE; scales to 4 significant digits), then
// "quantiles: ...", "keys: ..." and "value: <expr> clamped to [l, u], derived: / given" with the
// derivation's lines below it.
void WritePlanReportText(std::ostream& out, const PlanReportView& report,
                         const std::string& indent);

// A joined script's source (ExplainSqlResponse.join): {"tables": [{"dataset", "alias",
// "public"}], "conditions", "privacy_unit", "bounding"}.
nlohmann::json JoinPlanToJson(const dpq::v1::JoinPlan& join);

// "join: patients p JOIN regions r (public) ON r.code = p.region", then the privacy unit and the
// bounding on their own lines below it (indented by two spaces); each line prefixed by `indent`.
void WriteJoinPlanText(std::ostream& out, const dpq::v1::JoinPlan& join, const std::string& indent);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_PLAN_REPORT_OUTPUT_H_
