// AdminService's shard-server handlers: add, list and remove a shard. Thin: authenticate (admins
// only), proto -> domain, one engine call, proto out. The URL in AddShardRequest holds a
// password: it goes to the engine and nowhere else (not into a message, not into the log).
#include "server/api/services.h"
#include "server/api/status_mapping.h"
#include "server/base/status_macros.h"

namespace dpq::api {

void ToProto(const engine::ShardView& view, v1::Shard* out) {
  const store::Shard& s = view.shard;
  out->set_name(s.name);
  out->set_host(s.host);
  out->set_port(s.port);
  out->set_dbname(s.dbname);
  out->set_user(s.user);
  out->set_server_version(s.server_version_num);
  out->set_added_at(s.added_at);
  out->set_up(view.probe.up);
  out->set_probe_seconds(view.probe.seconds);
  if (!view.probe.up) out->set_probe_error(std::string(view.probe.error.message()));
}

namespace {

absl::Status ShardsServed(const ServiceOptions& options) {
  if (options.shards == nullptr) return absl::UnimplementedError("this dpqd has no shard registry");
  return absl::OkStatus();
}

}  // namespace

grpc::Status AdminService::AddShard(grpc::ServerContext* context,
                                    const v1::AddShardRequest* request, v1::Shard* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ShardsServed(options_));
    ASSIGN_OR_RETURN(engine::ShardView added,
                     options_.shards->Add(admin, request->name(), request->url()));
    ToProto(added, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListShards(grpc::ServerContext* context,
                                      const v1::ListShardsRequest* /*request*/,
                                      v1::ListShardsResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    RETURN_IF_ERROR(ShardsServed(options_));
    ASSIGN_OR_RETURN(std::vector<engine::ShardView> all, options_.shards->List());
    for (const engine::ShardView& s : all) ToProto(s, response->add_shards());
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::RemoveShard(grpc::ServerContext* context,
                                       const v1::RemoveShardRequest* request,
                                       v1::RemoveShardResponse* /*response*/) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ShardsServed(options_));
    return options_.shards->Remove(admin, request->name());
  }());
}

}  // namespace dpq::api
