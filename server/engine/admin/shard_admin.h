// The admin's shard-server actions (add, list with health, remove): the registry of the servers
// that will hold partitions of datasets (store/shard_store.h). Each mutating action appends its
// admin-log entry in the same transaction as the change; the URL, which may hold a password, is
// never logged (only its host, port, database and user). No gRPC.
#ifndef DPQ_SERVER_ENGINE_ADMIN_SHARD_ADMIN_H_
#define DPQ_SERVER_ENGINE_ADMIN_SHARD_ADMIN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/store/principal_store.h"
#include "server/store/shard_store.h"

namespace dpq::engine {

struct ShardView {
  store::Shard shard;
  store::ShardProbe probe;  // just now, through the coordinator
};

class ShardAdmin {
 public:
  explicit ShardAdmin(store::ShardStore* shards) : shards_(shards) {}

  // Logged as "shard.add"; the new shard probed once.
  absl::StatusOr<ShardView> Add(const store::Principal& admin, const std::string& name,
                                const std::string& url);
  // Every live shard by name, each probed now (one after the other, each at most
  // store::ShardStore::kProbeTimeout).
  absl::StatusOr<std::vector<ShardView>> List();
  // Logged as "shard.remove"; NOT_FOUND for an unknown shard.
  absl::Status Remove(const store::Principal& admin, const std::string& name);

 private:
  store::ShardStore* shards_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_SHARD_ADMIN_H_
