// AdminService: the lifecycle of principals and grants (list, revoke, rotate), and the server
// status an admin checks first. Thin handlers: validation, one store call, proto conversion.
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/api/admin_actions.h"
#include "server/api/auth.h"
#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/privacy_units.h"

namespace dpq::api {
namespace {

v1::Role RoleToProto(store::Role role) {
  return role == store::Role::kAdmin ? v1::ROLE_ADMIN : v1::ROLE_ANALYST;
}

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
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    ASSIGN_OR_RETURN(std::vector<store::PrincipalRecord> principals, o_.principals->List());
    ASSIGN_OR_RETURN(std::vector<store::GrantRecord> grants, o_.principals->ListGrants(absl::nullopt));
    std::map<std::string, std::vector<const store::GrantRecord*>> by_analyst;
    for (const store::GrantRecord& g : grants) by_analyst[g.analyst].push_back(&g);
    for (const store::PrincipalRecord& p : principals) {
      v1::AnalystInfo* info = response->add_analysts();
      info->set_name(p.principal.name);
      info->set_role(RoleToProto(p.principal.role));
      info->set_created_at(p.created_at);
      info->set_last_used_at(p.last_used_at);
      info->set_revoked_at(p.revoked_at);
      for (const store::GrantRecord* g : by_analyst[p.principal.name]) ToProto(*g, info->add_grants());
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::RevokeAnalyst(grpc::ServerContext* context,
                                         const v1::RevokeAnalystRequest* request,
                                         v1::RevokeAnalystResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal caller, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    if (request->name() == caller.name) {
      return absl::FailedPreconditionError(
          "an admin cannot revoke itself (another admin can; that keeps one admin able to act)");
    }
    const store::AdminAction log = Logged(caller, "analyst.revoke", request->name());
    return o_.principals->Revoke(request->name(), &log);
  }());
}

grpc::Status AdminService::RotateToken(grpc::ServerContext* context,
                                       const v1::RotateTokenRequest* request,
                                       v1::CreateAnalystResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    const std::string token = NewToken();
    const store::AdminAction log = Logged(admin, "token.rotate", request->name());
    ASSIGN_OR_RETURN(store::Principal p,
                     o_.principals->RotateToken(request->name(), TokenHash(token), &log));
    response->set_name(p.name);
    response->set_role(RoleToProto(p.role));
    response->set_token(token);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::RevokeGrant(grpc::ServerContext* context,
                                       const v1::RevokeGrantRequest* request,
                                       v1::RevokeGrantResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateAnalystName(request->analyst(), "analyst"));
    RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
    const store::AdminAction log =
        Logged(admin, "grant.revoke", absl::StrCat(request->analyst(), "/", request->dataset()));
    return o_.principals->RevokeGrant(request->analyst(), request->dataset(), &log);
  }());
}

grpc::Status AdminService::ListGrants(grpc::ServerContext* context,
                                      const v1::ListGrantsRequest* request,
                                      v1::ListGrantsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    absl::optional<std::string> dataset;
    if (!request->dataset().empty()) {
      RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
      dataset = request->dataset();
    }
    ASSIGN_OR_RETURN(std::vector<store::GrantRecord> grants, o_.principals->ListGrants(dataset));
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
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    response->set_server_version(DPQ_VERSION);
    absl::StatusOr<int64_t> version = o_.principals->SchemaVersion();
    absl::StatusOr<std::vector<query::DatasetSchema>> datasets =
        version.ok() ? o_.datasets->List(absl::nullopt) : version.status();
    if (!datasets.ok()) {
      response->set_database_reachable(false);
      response->set_database_error(std::string(datasets.status().message()));
      return absl::OkStatus();
    }
    response->set_database_reachable(true);
    response->set_schema_version(*version);
    // One query for every ledger (the one the metrics read), not one per dataset; dropped
    // datasets, which it also lists, are left out.
    ASSIGN_OR_RETURN(std::vector<store::BudgetState> budgets, o_.ledger->ListBudgets());
    std::map<int64_t, const store::BudgetState*> by_id;
    for (const store::BudgetState& b : budgets) by_id[b.dataset_id] = &b;
    for (const query::DatasetSchema& d : *datasets) {
      auto it = by_id.find(d.id);
      if (it == by_id.end()) continue;  // created between the two reads
      api::ToProto(*it->second, response->add_budgets());
      response->mutable_budgets()->rbegin()->set_preset(d.epsilon_preset);
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListAdminLog(grpc::ServerContext* context,
                                        const v1::ListAdminLogRequest* /*request*/,
                                        v1::ListAdminLogResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    ASSIGN_OR_RETURN(std::vector<store::AdminLogEntry> entries, o_.admin_log->List());
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
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    ASSIGN_OR_RETURN(store::AdminLog::Verification v, o_.admin_log->Verify(request->full()));
    if (o_.metrics != nullptr) o_.metrics->RecordAuditVerifyRows("", v.rows_read);
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
