// dpqctl shard add | list | remove: the registry of shard servers (admin). The URL holds the
// shard's password: it is taken from --url-file or $DPQ_SHARD_URL (neither shows in `ps`) or
// --url, sent to dpqd once, and never printed.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/shard_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {
namespace {

struct AddFlags {
  std::string name, url, url_file;
};

// The URL from --url-file (first line, surrounding whitespace dropped) or --url / $DPQ_SHARD_URL.
// Usage errors name the flag, never the URL.
absl::StatusOr<std::string> ShardUrlFrom(const AddFlags& flags) {
  if (!flags.url_file.empty() && !flags.url.empty()) {
    return absl::InvalidArgumentError("give the shard's URL once: --url-file, or --url");
  }
  if (flags.url_file.empty()) {
    if (flags.url.empty()) {
      return absl::InvalidArgumentError(
          "the shard's URL is required: --url-file FILE, $DPQ_SHARD_URL, or --url URL");
    }
    return flags.url;
  }
  std::ifstream file(flags.url_file, std::ios::binary);
  if (!file)
    return absl::InvalidArgumentError(absl::StrCat("cannot read --url-file ", flags.url_file));
  std::string line;
  std::getline(file, line);
  line = std::string(absl::StripAsciiWhitespace(line));
  if (line.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--url-file ", flags.url_file, " is empty"));
  }
  return line;
}

}  // namespace

int RunShardAdd(const GlobalOptions& options, const Output& output, const std::string& name,
                const std::string& url) {
  dpq::v1::AddShardRequest request;
  request.set_name(name);
  request.set_url(url);
  return RunRpc<dpq::v1::Shard>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Shard* response) {
        return dpq::v1::AdminService::NewStub(channel)->AddShard(context, request, response);
      },
      ShardToJson, WriteShardText);
}

int RunShardList(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListShardsRequest request;
  return RunRpc<dpq::v1::ListShardsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListShardsResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->ListShards(context, request, response);
      },
      ListShardsResponseToJson, WriteListShardsText);
}

int RunShardRemove(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::RemoveShardRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::RemoveShardResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::RemoveShardResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->RemoveShard(context, request, response);
      },
      [&name](const dpq::v1::RemoveShardResponse&) {
        return nlohmann::json{{"removed", name}};
      },
      [&name](std::ostream& out, const dpq::v1::RemoveShardResponse&) {
        out << "removed shard '" << name
            << "' (its foreign server and user mappings are dropped)\n";
      });
}

void RegisterShardCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* shard =
      app.add_subcommand("shard", "shard servers that will hold partitions of datasets (admin)");
  shard->require_subcommand(1);

  AddFlags& add_flags = command_line.Keep<AddFlags>();
  CLI::App* add = shard->add_subcommand("add", "register a shard server and check it answers");
  add->add_option("name", add_flags.name, "shard name: [a-z][a-z0-9_]{0,39}")->required();
  add->add_option("--url", add_flags.url,
                  "postgresql://USER:PASSWORD@HOST:PORT/DBNAME (a secret: prefer --url-file)")
      ->envname("DPQ_SHARD_URL");
  add->add_option("--url-file", add_flags.url_file, "file whose first line is the shard's URL");
  command_line.RunWhenParsed(add, [&add_flags](const GlobalOptions& options, const Output& output) {
    absl::StatusOr<std::string> url = ShardUrlFrom(add_flags);
    if (!url.ok()) return ReportUsageError(output, url.status());
    return RunShardAdd(options, output, add_flags.name, *url);
  });

  CLI::App* list = shard->add_subcommand("list", "every shard server and whether it answers now");
  command_line.RunWhenParsed(list, RunShardList);

  std::string& remove_name = command_line.Keep<std::string>();
  CLI::App* remove = shard->add_subcommand(
      "remove", "unregister a shard server (drops its foreign server on the coordinator)");
  remove->add_option("name", remove_name, "shard name")->required();
  command_line.RunWhenParsed(remove,
                             [&remove_name](const GlobalOptions& options, const Output& output) {
                               return RunShardRemove(options, output, remove_name);
                             });
}

}  // namespace dpqctl
