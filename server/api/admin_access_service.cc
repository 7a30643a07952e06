// AdminService: the lifecycle of principals and grants (list, revoke, rotate), and the server
// status an admin checks first. Thin handlers: validation, one engine-level call, proto conversion.
#include <vector>

#include "server/api/auth.h"
#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/privacy_units.h"

namespace dpq::api {
namespace {

void ToProto(const store::GrantRecord& g, v1::GrantInfo* out) {
  out->set_analyst(g.analyst);
  out->set_dataset(g.dataset);
  if (g.epsilon_cap_units) out->set_epsilon_cap(query::EpsilonFromUnits(*g.epsilon_cap_units));
  if (g.delta_cap_units) out->set_delta_cap(query::DeltaFromUnits(*g.delta_cap_units));
  out->set_epsilon_spent(query::EpsilonFromUnits(g.epsilon_spent_units));
  out->set_delta_spent(query::DeltaFromUnits(g.delta_spent_units));
  out->set_created_at(g.created_at);
  out->set_revoked_at(g.revoked_at);
}

}  // namespace

grpc::Status AdminService::ListAnalysts(grpc::ServerContext* context,
                                        const v1::ListAnalystsRequest* /*request*/,
                                        v1::ListAnalystsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(std::vector<engine::PrincipalAccess> principals,
                     options_.access->ListPrincipals());
    for (const engine::PrincipalAccess& p : principals) {
      v1::AnalystInfo* info = response->add_analysts();
      info->set_name(p.record.principal.name);
      info->set_role(RoleToProto(p.record.principal.role));
      info->set_created_at(p.record.created_at);
      info->set_last_used_at(p.record.last_used_at);
      info->set_revoked_at(p.record.revoked_at);
      for (const store::GrantRecord& g : p.grants) ToProto(g, info->add_grants());
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::RevokeAnalyst(grpc::ServerContext* context,
                                         const v1::RevokeAnalystRequest* request,
                                         v1::RevokeAnalystResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal caller, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    return options_.access->Revoke(caller, request->name());
  }());
}

grpc::Status AdminService::RotateToken(grpc::ServerContext* context,
                                       const v1::RotateTokenRequest* request,
                                       v1::CreateAnalystResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    ASSIGN_OR_RETURN(engine::IssuedToken issued,
                     options_.access->RotateToken(admin, request->name()));
    ToProto(issued, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::RevokeGrant(grpc::ServerContext* context,
                                       const v1::RevokeGrantRequest* request,
                                       v1::RevokeGrantResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateAnalystName(request->analyst(), "analyst"));
    RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
    return options_.access->RevokeGrant(admin, request->analyst(), request->dataset());
  }());
}

grpc::Status AdminService::ListGrants(grpc::ServerContext* context,
                                      const v1::ListGrantsRequest* request,
                                      v1::ListGrantsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    absl::optional<std::string> dataset;
    if (!request->dataset().empty()) {
      RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
      dataset = request->dataset();
    }
    ASSIGN_OR_RETURN(std::vector<store::GrantRecord> grants, options_.access->ListGrants(dataset));
    for (const store::GrantRecord& g : grants) ToProto(g, response->add_grants());
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ServerStatus(grpc::ServerContext* context,
                                        const v1::ServerStatusRequest* /*request*/,
                                        v1::ServerStatusResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    // Authenticating reads the database: with the database down this call is UNAVAILABLE, which
    // `dpqctl status` reports as "database unreachable".
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    response->set_server_version(DPQ_VERSION);
    ASSIGN_OR_RETURN(engine::ServerOverview overview, options_.budgets->Overview());
    response->set_database_reachable(overview.database_reachable);
    if (!overview.database_reachable) {
      response->set_database_error(overview.database_error);
      return absl::OkStatus();
    }
    response->set_schema_version(overview.schema_version);
    for (const engine::DatasetBudget& b : overview.budgets) ToProto(b, response->add_budgets());
    if (options_.shards != nullptr) {
      ASSIGN_OR_RETURN(std::vector<engine::ShardView> shards, options_.shards->List());
      for (const engine::ShardView& s : shards) ToProto(s, response->add_shards());
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListAdminLog(grpc::ServerContext* context,
                                        const v1::ListAdminLogRequest* /*request*/,
                                        v1::ListAdminLogResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(std::vector<store::AdminLogEntry> entries, options_.audit->ListAdminLog());
    for (const store::AdminLogEntry& e : entries) {
      v1::AdminLogEntry* out = response->add_entries();
      out->set_seq(e.seq);
      out->set_created_at(e.created_at);
      out->set_admin(e.action.admin);
      out->set_action(e.action.action);
      out->set_target(e.action.target);
      out->set_details(e.action.details);
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::VerifyAdminLog(grpc::ServerContext* context,
                                          const v1::VerifyAdminLogRequest* request,
                                          v1::VerifyAdminLogResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(store::AdminLog::Verification v,
                     options_.audit->VerifyAdminLog(request->full()));
    if (options_.metrics != nullptr) options_.metrics->RecordAuditVerifyRows("", v.rows_read);
    response->set_ok(v.ok);
    response->set_entries(v.entries);
    response->set_first_broken_seq(v.first_broken_seq);
    response->set_reason(v.reason);
    response->set_full(v.full);
    response->set_rows_read(v.rows_read);
    response->set_checkpoint_seq(v.checkpoint_seq);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
