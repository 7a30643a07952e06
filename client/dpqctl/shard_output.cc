#include "client/dpqctl/shard_output.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/dpqctl/text_output.h"

namespace dpqctl {
namespace {

std::string Address(const dpq::v1::Shard& s) {
  if (absl::StrContains(s.host(), ':') && !absl::StartsWith(s.host(), "/")) {
    return absl::StrCat("[", s.host(), "]:", s.port());
  }
  return absl::StrCat(s.host(), ":", s.port());
}

std::string State(const dpq::v1::Shard& s) { return s.up() ? "up" : "down"; }

std::vector<std::vector<std::string>> Rows(
    const google::protobuf::RepeatedPtrField<dpq::v1::Shard>& shards) {
  std::vector<std::vector<std::string>> rows;
  for (const dpq::v1::Shard& s : shards) {
    rows.push_back({s.name(), Address(s), s.dbname(), ShardVersionText(s.server_version()),
                    State(s), absl::StrCat(FormatSignificant(1000 * s.probe_seconds(), 3), " ms")});
  }
  return rows;
}

const std::vector<std::string> kHeader = {"SHARD",   "ADDRESS", "DATABASE",
                                          "VERSION", "STATE",   "PROBE"};

}  // namespace

std::string ShardVersionText(int version_num) {
  if (version_num <= 0) return "-";
  return absl::StrCat(version_num / 10000, ".", version_num % 10000);
}

nlohmann::json ShardToJson(const dpq::v1::Shard& s) {
  return {
      {"name", s.name()},
      {"host", s.host()},
      {"port", s.port()},
      {"dbname", s.dbname()},
      {"user", s.user()},
      {"server_version_num", s.server_version()},
      {"server_version", ShardVersionText(s.server_version())},
      {"state", State(s)},
      {"up", s.up()},
      {"probe_seconds", s.probe_seconds()},
      {"probe_error", s.probe_error()},
      {"added_at", s.added_at()},
  };
}

nlohmann::json ListShardsResponseToJson(const dpq::v1::ListShardsResponse& response) {
  nlohmann::json out = nlohmann::json::array();
  for (const dpq::v1::Shard& s : response.shards()) out.push_back(ShardToJson(s));
  return {{"shards", out}};
}

void WriteShardText(std::ostream& out, const dpq::v1::Shard& s) {
  out << "added shard '" << s.name() << "' at " << Address(s) << " (database " << s.dbname()
      << ", PostgreSQL " << ShardVersionText(s.server_version()) << "), " << State(s) << '\n';
  if (!s.up()) out << "probe: " << s.probe_error() << '\n';
}

void WriteListShardsText(std::ostream& out, const dpq::v1::ListShardsResponse& response) {
  if (response.shards().empty()) {
    out << "no shard servers (add one with `dpqctl shard add NAME --url-file FILE`)\n";
    return;
  }
  WriteTable(out, kHeader, Rows(response.shards()));
}

void WriteShardsSection(std::ostream& out,
                        const google::protobuf::RepeatedPtrField<dpq::v1::Shard>& shards) {
  if (shards.empty()) {
    out << "shards:    none\n";
    return;
  }
  out << '\n';
  WriteTable(out, kHeader, Rows(shards));
}

}  // namespace dpqctl
