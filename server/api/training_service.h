// TrainingService (proto/dpq/v1/training.proto): thin handlers over engine::TrainingEngine.
// Who may call: an analyst granted on the dataset (like Query) for its own runs, and the admin for
// any run. Each method: authenticate, one engine call, proto out, one ToGrpcStatus.
#ifndef DPQ_SERVER_API_TRAINING_SERVICE_H_
#define DPQ_SERVER_API_TRAINING_SERVICE_H_

#include "dpq/v1/training.grpc.pb.h"
#include "server/api/auth.h"
#include "server/engine/training_engine.h"

namespace dpq::api {

class TrainingService final : public v1::TrainingService::Service {
 public:
  TrainingService(const engine::Authenticator* auth, engine::TrainingEngine* engine)
      : auth_(auth), engine_(engine) {}

  grpc::Status StartRun(grpc::ServerContext* context, const v1::StartRunRequest* request,
                        v1::TrainingRun* response) override;
  grpc::Status ReportSteps(grpc::ServerContext* context, const v1::ReportStepsRequest* request,
                           v1::ReportStepsResponse* response) override;
  grpc::Status GetRun(grpc::ServerContext* context, const v1::GetRunRequest* request,
                      v1::TrainingRun* response) override;
  grpc::Status ListRuns(grpc::ServerContext* context, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override;

 private:
  const engine::Authenticator* auth_;
  engine::TrainingEngine* engine_;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_TRAINING_SERVICE_H_
