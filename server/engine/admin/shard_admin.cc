#include "server/engine/admin/shard_admin.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/engine/admin/admin_action.h"
#include "server/store/shard_url.h"

namespace dpq::engine {

absl::StatusOr<ShardView> ShardAdmin::Add(const store::Principal& admin, const std::string& name,
                                          const std::string& url) {
  RETURN_IF_ERROR(store::ValidateShardName(name));
  ASSIGN_OR_RETURN(store::ShardUrl parsed, store::ParseShardUrl(url));
  const store::AdminAction log =
      Logged(admin, "shard.add", name,
             absl::StrCat("address=", store::ShardAddress(parsed.host, parsed.port),
                          " dbname=", parsed.dbname, " user=", parsed.user));
  ShardView view;
  ASSIGN_OR_RETURN(view.shard, shards_->Add(name, url, &log));
  ASSIGN_OR_RETURN(view.probe, shards_->Probe(name));
  return view;
}

absl::StatusOr<std::vector<ShardView>> ShardAdmin::List() {
  ASSIGN_OR_RETURN(std::vector<store::Shard> shards, shards_->List());
  ASSIGN_OR_RETURN(std::vector<store::ShardProbe> probes, shards_->ProbeAll());
  std::map<std::string, store::ShardProbe> by_name;
  for (store::ShardProbe& p : probes) by_name[p.name] = std::move(p);
  std::vector<ShardView> out;
  for (store::Shard& s : shards) {
    ShardView view{std::move(s), {}};
    auto it = by_name.find(view.shard.name);
    if (it != by_name.end()) {
      view.probe = std::move(it->second);
    } else {  // added between the two reads: probed at the next listing
      view.probe.name = view.shard.name;
      view.probe.error = absl::UnavailableError("not probed yet");
    }
    out.push_back(std::move(view));
  }
  return out;
}

absl::Status ShardAdmin::Remove(const store::Principal& admin, const std::string& name) {
  const store::AdminAction log = Logged(admin, "shard.remove", name);
  return shards_->Remove(name, &log);
}

}  // namespace dpq::engine
