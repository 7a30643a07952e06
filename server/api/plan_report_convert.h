// engine::PlanReport (what a query's plan will release and how) onto the wire: the noise
// components, a quantile's method, the released keys and the value's per-row expression, shared
// by PlanResponse (the Plan RPC), SqlPlanPart (ExplainSql) and the run's reports.
#ifndef DPQ_SERVER_API_PLAN_REPORT_CONVERT_H_
#define DPQ_SERVER_API_PLAN_REPORT_CONVERT_H_

#include <vector>

#include "dpq/v1/dpq.pb.h"
#include "google/protobuf/repeated_field.h"
#include "server/engine/plan_report.h"
#include "server/engine/query_engine.h"

namespace dpq::api {

void ToProto(const engine::ComponentReport& component, v1::NoiseComponent* out);
void ToProto(const std::vector<engine::ComponentReport>& components,
             google::protobuf::RepeatedPtrField<v1::NoiseComponent>* out);
void ToProto(const engine::KeysReport& keys, v1::ReleasedKeys* out);
void ToProto(const engine::ExpressionReport& expression, v1::ValueExpression* out);
void ToProto(const engine::JoinReport& join, v1::JoinPlan* out);

// The mechanism an explained query reports: EXPONENTIAL when the exponential mechanism chooses a
// quantile's values, else the additive noise's (a quantile read off its noisy histogram included).
v1::Mechanism MechanismOf(const engine::AccuracyPlan& plan);

// PlanResponse and SqlPlanPart carry the same report fields.
template <typename Message>
void ReportToProto(const engine::PlanReport& report, Message* out) {
  ToProto(report.components, out->mutable_components());
  if (report.quantile.planned) {
    out->mutable_quantile()->set_method(report.quantile.exponential ? "exponential" : "histogram");
    out->mutable_quantile()->set_epsilon(report.quantile.selection_epsilon);
  }
  ToProto(report.keys, out->mutable_keys());
  if (report.value_expression.present) {
    ToProto(report.value_expression, out->mutable_value_expression());
  }
}

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_PLAN_REPORT_CONVERT_H_
