// AdminService's population handlers: create, list, show and drop a population. Thin: authenticate,
// proto -> domain, one engine call, proto out.
#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"

namespace dpq::api {
namespace {

void ToProto(const engine::PopulationView& view, v1::Population* out) {
  const store::Population& p = view.population;
  out->set_name(p.name);
  out->set_unit_type(ColumnTypeToProto(p.unit_type));
  out->set_created_at(p.created_at);
  out->set_dropped(p.dropped);
  for (const std::string& d : p.datasets) out->add_datasets(d);
  engine::DatasetBudget budget;
  budget.budget = view.budget;
  budget.preset = view.budget.epsilon_preset;
  api::ToProto(budget, out->mutable_budget());
}

// A double unit type is passed on: the engine refuses it with the reason.
absl::StatusOr<query::ColumnType> UnitTypeFromProto(v1::ColumnType type) {
  const absl::optional<query::ColumnType> unit_type = ColumnTypeFromProto(type);
  if (!unit_type.has_value()) {
    return absl::InvalidArgumentError(
        "unit_type is required: integer or text (the type of the privacy-unit column of every "
        "dataset of the population)");
  }
  return *unit_type;
}

}  // namespace

grpc::Status AdminService::CreatePopulation(grpc::ServerContext* context,
                                            const v1::CreatePopulationRequest* request,
                                            v1::Population* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    ASSIGN_OR_RETURN(query::ColumnType unit_type, UnitTypeFromProto(request->unit_type()));
    ASSIGN_OR_RETURN(engine::PopulationView created,
                     options_.populations->Create(admin, request->name(), unit_type));
    ToProto(created, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListPopulations(grpc::ServerContext* context,
                                           const v1::ListPopulationsRequest* /*request*/,
                                           v1::ListPopulationsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(std::vector<engine::PopulationView> all, options_.populations->List());
    for (const engine::PopulationView& p : all) ToProto(p, response->add_populations());
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::GetPopulation(grpc::ServerContext* context,
                                         const v1::GetPopulationRequest* request,
                                         v1::Population* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    ASSIGN_OR_RETURN(engine::PopulationView found, options_.populations->Get(request->name()));
    ToProto(found, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::DropPopulation(grpc::ServerContext* context,
                                          const v1::DropPopulationRequest* request,
                                          v1::DropPopulationResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    return options_.populations->Drop(admin, request->name());
  }());
}

}  // namespace dpq::api
