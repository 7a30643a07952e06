// The gRPC services of dpq.v1. Each method: authenticate, proto -> domain, one call into an
// engine-level class, domain -> proto, one ToGrpcStatus. No store, no SQL, no noise, no budget
// arithmetic here.
#ifndef DPQ_SERVER_API_SERVICES_H_
#define DPQ_SERVER_API_SERVICES_H_

#include "dpq/v1/dpq.grpc.pb.h"
#include "server/api/auth.h"
#include "server/api/query_admission.h"
#include "server/engine/accounting.h"
#include "server/engine/admin/access_admin.h"
#include "server/engine/admin/audit_trails.h"
#include "server/engine/admin/budget_book.h"
#include "server/engine/admin/dataset_admin.h"
#include "server/engine/admin/population_admin.h"
#include "server/engine/admin/shard_admin.h"
#include "server/engine/authenticator.h"
#include "server/engine/query_engine.h"
#include "server/metrics/metrics.h"

namespace dpq::api {

// The most one upload (CreateDataset, LoadDataset) may carry; 0: unlimited.
struct UploadLimits {
  int64_t max_bytes = int64_t{4} << 30;  // CSV bytes
  int64_t max_rows = 100'000'000;        // CSV data rows
};

struct ServiceOptions {
  const engine::Authenticator* auth;
  engine::QueryEngine* engine;
  engine::DatasetAdmin* datasets;
  engine::AccessAdmin* access;
  engine::BudgetBook* budgets;
  engine::AuditTrails* audit;
  const engine::Accounting* accounting;
  metrics::Metrics* metrics;
  QueryAdmission* admission;  // per-analyst concurrency and rate of Query and QueryBatch
  UploadLimits upload;
  engine::PopulationAdmin* populations = nullptr;
  engine::ShardAdmin* shards = nullptr;  // null: the shard RPCs are UNIMPLEMENTED
};

class AnalystService final : public v1::AnalystService::Service {
 public:
  explicit AnalystService(ServiceOptions options) : options_(options) {}

  grpc::Status WhoAmI(grpc::ServerContext* context, const v1::WhoAmIRequest* request,
                      v1::WhoAmIResponse* response) override;
  grpc::Status Query(grpc::ServerContext* context, const v1::QueryRequest* request,
                     v1::QueryResponse* response) override;
  grpc::Status QueryBatch(grpc::ServerContext* context, const v1::QueryBatchRequest* request,
                          v1::QueryBatchResponse* response) override;
  grpc::Status Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                    v1::PlanResponse* response) override;
  grpc::Status ListDatasets(grpc::ServerContext* context, const v1::ListDatasetsRequest* request,
                            v1::ListDatasetsResponse* response) override;
  grpc::Status GetDataset(grpc::ServerContext* context, const v1::GetDatasetRequest* request,
                          v1::Dataset* response) override;
  grpc::Status GetBudget(grpc::ServerContext* context, const v1::GetBudgetRequest* request,
                         v1::Budget* response) override;
  // DP SQL (analyst_sql.cc).
  grpc::Status ExecuteSql(grpc::ServerContext* context, const v1::SqlRequest* request,
                          v1::SqlResponse* response) override;
  grpc::Status ExplainSql(grpc::ServerContext* context, const v1::SqlRequest* request,
                          v1::ExplainSqlResponse* response) override;

 private:
  ServiceOptions options_;
};

// A shard as AdminService returns it (ListShards, AddShard, ServerStatus).
void ToProto(const engine::ShardView& view, v1::Shard* out);

class AdminService final : public v1::AdminService::Service {
 public:
  explicit AdminService(ServiceOptions options) : options_(options) {}

  grpc::Status CreateDataset(grpc::ServerContext* context,
                             grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                             v1::CreateDatasetResponse* response) override;
  grpc::Status LoadDataset(grpc::ServerContext* context,
                           grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                           v1::CreateDatasetResponse* response) override;
  grpc::Status DropDataset(grpc::ServerContext* context, const v1::DropDatasetRequest* request,
                           v1::DropDatasetResponse* response) override;
  grpc::Status CreateAnalyst(grpc::ServerContext* context, const v1::CreateAnalystRequest* request,
                             v1::CreateAnalystResponse* response) override;
  grpc::Status Grant(grpc::ServerContext* context, const v1::GrantRequest* request,
                     v1::GrantResponse* response) override;
  // Lifecycle of principals and grants (admin_access_service.cc).
  grpc::Status ListAnalysts(grpc::ServerContext* context, const v1::ListAnalystsRequest* request,
                            v1::ListAnalystsResponse* response) override;
  grpc::Status RevokeAnalyst(grpc::ServerContext* context, const v1::RevokeAnalystRequest* request,
                             v1::RevokeAnalystResponse* response) override;
  grpc::Status RotateToken(grpc::ServerContext* context, const v1::RotateTokenRequest* request,
                           v1::CreateAnalystResponse* response) override;
  grpc::Status RevokeGrant(grpc::ServerContext* context, const v1::RevokeGrantRequest* request,
                           v1::RevokeGrantResponse* response) override;
  grpc::Status ListGrants(grpc::ServerContext* context, const v1::ListGrantsRequest* request,
                          v1::ListGrantsResponse* response) override;
  grpc::Status ServerStatus(grpc::ServerContext* context, const v1::ServerStatusRequest* request,
                            v1::ServerStatusResponse* response) override;
  grpc::Status ListAdminLog(grpc::ServerContext* context, const v1::ListAdminLogRequest* request,
                            v1::ListAdminLogResponse* response) override;
  grpc::Status VerifyAdminLog(grpc::ServerContext* context,
                              const v1::VerifyAdminLogRequest* request,
                              v1::VerifyAdminLogResponse* response) override;
  grpc::Status SetBudget(grpc::ServerContext* context, const v1::SetBudgetRequest* request,
                         v1::Budget* response) override;
  grpc::Status ListAudit(grpc::ServerContext* context, const v1::ListAuditRequest* request,
                         v1::ListAuditResponse* response) override;
  grpc::Status VerifyAudit(grpc::ServerContext* context, const v1::VerifyAuditRequest* request,
                           v1::VerifyAuditResponse* response) override;
  // Populations (population_admin_service.cc).
  grpc::Status CreatePopulation(grpc::ServerContext* context,
                                const v1::CreatePopulationRequest* request,
                                v1::Population* response) override;
  grpc::Status ListPopulations(grpc::ServerContext* context,
                               const v1::ListPopulationsRequest* request,
                               v1::ListPopulationsResponse* response) override;
  grpc::Status GetPopulation(grpc::ServerContext* context, const v1::GetPopulationRequest* request,
                             v1::Population* response) override;
  grpc::Status DropPopulation(grpc::ServerContext* context,
                              const v1::DropPopulationRequest* request,
                              v1::DropPopulationResponse* response) override;
  // Shard servers (shard_admin_service.cc).
  grpc::Status AddShard(grpc::ServerContext* context, const v1::AddShardRequest* request,
                        v1::Shard* response) override;
  grpc::Status ListShards(grpc::ServerContext* context, const v1::ListShardsRequest* request,
                          v1::ListShardsResponse* response) override;
  grpc::Status RemoveShard(grpc::ServerContext* context, const v1::RemoveShardRequest* request,
                           v1::RemoveShardResponse* response) override;

 private:
  ServiceOptions options_;
};

// AccountingService: privacy arithmetic over declared events (engine/accounting.h). Any
// authenticated caller (UNAUTHENTICATED otherwise); reads no dataset, touches no ledger, charges
// nothing. INVALID_ARGUMENT names the offending request field ("accountant", "delta", "events[i]",
// "target_epsilon", "q", "steps"); RESOURCE_EXHAUSTED when a PLD grows too large;
// DEADLINE_EXCEEDED when the computation outlived the call's deadline.
class AccountingService final : public v1::AccountingService::Service {
 public:
  explicit AccountingService(ServiceOptions options) : options_(options) {}

  grpc::Status Price(grpc::ServerContext* context, const v1::PriceRequest* request,
                     v1::PriceResponse* response) override;
  grpc::Status Calibrate(grpc::ServerContext* context, const v1::CalibrateRequest* request,
                         v1::CalibrateResponse* response) override;

 private:
  ServiceOptions options_;
};

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_SERVICES_H_
