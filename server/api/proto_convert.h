// Conversions between the dpq.v1 wire types and the domain types of query/, store/ and engine/.
#ifndef DPQ_SERVER_API_PROTO_CONVERT_H_
#define DPQ_SERVER_API_PROTO_CONVERT_H_

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "dpq/v1/dpq.pb.h"
#include "server/engine/admin/access_admin.h"
#include "server/engine/admin/budget_book.h"
#include "server/engine/query_engine.h"
#include "server/query/dataset_schema.h"
#include "server/query/query_spec.h"
#include "server/store/allocation.h"

namespace dpq::api {

// INVALID_ARGUMENT for a missing/unknown aggregate or an unknown mechanism. Defaults: mechanism
// laplace, max_contributions 1, confidence 0.95. Everything else is validated by the planner.
absl::StatusOr<query::QuerySpec> QuerySpecFromProto(const v1::QueryRequest& request);
// INVALID_ARGUMENT for a missing/unknown column type; ValidateNewDataset does the rest.
absl::StatusOr<query::DatasetSchema> DatasetSchemaFromProto(const v1::DatasetHeader& header);
v1::ColumnType ColumnTypeToProto(query::ColumnType type);
// Empty for COLUMN_TYPE_UNSPECIFIED (and any value this server does not know).
absl::optional<query::ColumnType> ColumnTypeFromProto(v1::ColumnType type);

void ToProto(const engine::QueryOutcome& outcome, v1::QueryResponse* out);
void ToProto(const engine::BatchOutcome& outcome, v1::QueryBatchResponse* out);
void ToProto(const engine::AccuracyPlan& plan, v1::PlanResponse* out);
void ToProto(const store::BudgetState& budget, v1::Budget* out);
// The budget with its preset and warnings.
void ToProto(const engine::DatasetBudget& budget, v1::Budget* out);
v1::Role RoleToProto(store::Role role);
void ToProto(const engine::IssuedToken& issued, v1::CreateAnalystResponse* out);
void ToProto(const query::DatasetSchema& schema, v1::Dataset* out);
void ToProto(const store::Allocation& allocation, v1::AuditEntry* out);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_PROTO_CONVERT_H_
