#include "server/api/training_service.h"
#include "server/api/call_deadline.h"

#include <chrono>
#include <utility>

#include "absl/time/time.h"

#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/query/privacy_units.h"

namespace dpq::api {
namespace {

void ToProto(const engine::TrainingRunStatus& s, v1::TrainingRun* out) {
  out->set_dataset(s.dataset);
  out->set_run(s.run.name);
  out->set_analyst(s.run.analyst);
  out->set_sampling_rate(s.run.sampling_rate);
  out->set_noise_multiplier(s.run.noise_multiplier);
  out->set_delta(query::DeltaFromUnits(s.run.delta_units));
  out->set_target_epsilon(s.run.target_epsilon.value_or(0));
  out->set_planned_steps(s.run.planned_steps.value_or(0));
  out->set_created_at(s.run.created_at);
  out->set_accountant(std::string(dp::accounting::AccountantName(s.accountant)));
  out->set_steps(s.progress.steps);
  out->set_reports(s.progress.reports);
  out->set_epsilon(s.epsilon);
  out->set_epsilon_charged(query::EpsilonFromUnits(s.progress.epsilon_units));
  out->set_delta_charged(query::DeltaFromUnits(s.progress.delta_units));
  out->set_steps_left(s.steps_left);
  out->set_budget_epsilon_remaining(s.budget.epsilon_remaining());
  out->set_budget_delta_remaining(s.budget.delta_remaining());
}

}  // namespace

grpc::Status TrainingService::StartRun(grpc::ServerContext* context,
                                       const v1::StartRunRequest* request,
                                       v1::TrainingRun* response) {
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*auth_, *context));
    engine::TrainingRunRequest r;
    r.dataset = request->dataset();
    r.name = request->run();
    r.sampling_rate = request->sampling_rate();
    r.noise_multiplier = request->noise_multiplier();
    r.delta = request->delta();
    r.target_epsilon = request->target_epsilon();
    r.steps = request->steps();
    ASSIGN_OR_RETURN(engine::TrainingRunStatus s,
                     engine_->StartRun(principal, r, CallDeadline(*context)));
    ToProto(s, response);
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

grpc::Status TrainingService::ReportSteps(grpc::ServerContext* context,
                                          const v1::ReportStepsRequest* request,
                                          v1::ReportStepsResponse* response) {
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*auth_, *context));
    ASSIGN_OR_RETURN(
        engine::StepReportOutcome out,
        engine_->ReportSteps(principal, request->dataset(), request->run(), request->steps(),
                             request->request_id(), CallDeadline(*context)));
    ToProto(out.status, response->mutable_run());
    response->set_request_id(out.allocation.request_id);
    response->set_seq(out.allocation.seq);
    response->set_epsilon(out.allocation.epsilon());
    response->set_delta(out.allocation.delta());
    response->set_method(out.allocation.mechanism);
    response->set_replayed(out.replayed);
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

grpc::Status TrainingService::GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                                     v1::TrainingRun* response) {
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*auth_, *context));
    ASSIGN_OR_RETURN(
        engine::TrainingRunStatus s,
        engine_->GetRun(principal, request->dataset(), request->run(), CallDeadline(*context)));
    ToProto(s, response);
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

grpc::Status TrainingService::ListRuns(grpc::ServerContext* context,
                                       const v1::ListRunsRequest* request,
                                       v1::ListRunsResponse* response) {
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal principal, Authenticate(*auth_, *context));
    ASSIGN_OR_RETURN(std::vector<engine::TrainingRunStatus> runs,
                     engine_->ListRuns(principal, request->dataset()));
    for (const auto& s : runs) ToProto(s, response->add_runs());
    return absl::OkStatus();
  }();
  if (!status.ok()) response->Clear();
  return ToGrpcStatus(*context, status);
}

}  // namespace dpq::api
