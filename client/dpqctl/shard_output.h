// dpqctl shard add | list and the shard part of `dpqctl status`: the shard servers, as text for
// people and as JSON for programs. No URL or password is ever shown (the server never returns one).
#ifndef DPQ_CLIENT_DPQCTL_SHARD_OUTPUT_H_
#define DPQ_CLIENT_DPQCTL_SHARD_OUTPUT_H_

#include <ostream>
#include <string>

#include "dpq/v1/dpq.pb.h"
#include "google/protobuf/repeated_field.h"
#include "nlohmann/json.hpp"

namespace dpqctl {

// server_version_num as people write it: 150018 -> "15.18".
std::string ShardVersionText(int version_num);

nlohmann::json ShardToJson(const dpq::v1::Shard& shard);
nlohmann::json ListShardsResponseToJson(const dpq::v1::ListShardsResponse& response);
// "added shard NAME at ADDRESS (PostgreSQL 15.x), up".
void WriteShardText(std::ostream& out, const dpq::v1::Shard& shard);
// One aligned row per shard: name, address, database, version, state (and the probe's time).
void WriteListShardsText(std::ostream& out, const dpq::v1::ListShardsResponse& response);
// The same table for `dpqctl status`, preceded by a blank line; "shards:    none" without any.
void WriteShardsSection(std::ostream& out,
                        const google::protobuf::RepeatedPtrField<dpq::v1::Shard>& shards);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_SHARD_OUTPUT_H_
