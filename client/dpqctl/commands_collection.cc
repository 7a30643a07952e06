// Local-DP collections: create, list, show, submit (randomized here, before sending), estimate.
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/command_table.h"
#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "client/ldp/ldp_randomizer.h"
#include "dpq/v1/collection.grpc.pb.h"

namespace dpqctl {
namespace {

using dpq::v1::CollectionService;

const char* MechanismName(dpq::v1::LdpMechanism m) {
  switch (m) {
    case dpq::v1::LDP_MECHANISM_RR: return "rr";
    case dpq::v1::LDP_MECHANISM_KRR: return "krr";
    case dpq::v1::LDP_MECHANISM_OUE: return "oue";
    case dpq::v1::LDP_MECHANISM_OLH: return "olh";
    default: return "unspecified";
  }
}

absl::StatusOr<dpq::v1::LdpMechanism> ParseMechanism(const std::string& name) {
  if (name == "rr") return dpq::v1::LDP_MECHANISM_RR;
  if (name == "krr") return dpq::v1::LDP_MECHANISM_KRR;
  if (name == "oue") return dpq::v1::LDP_MECHANISM_OUE;
  if (name == "olh") return dpq::v1::LDP_MECHANISM_OLH;
  return absl::InvalidArgumentError(
      absl::StrCat("--mechanism must be rr, krr, oue or olh, got '", name, "'"));
}

nlohmann::json CollectionToJson(const dpq::v1::Collection& c) {
  nlohmann::json j{{"name", c.name()},
                   {"domain", std::vector<std::string>(c.domain().begin(), c.domain().end())},
                   {"epsilon", c.epsilon()},
                   {"mechanism", MechanismName(c.mechanism())},
                   {"reports_per_client", c.reports_per_client()},
                   {"reports", c.reports()},
                   {"created_at", c.created_at()}};
  if (c.olh_hash_range() > 0) j["olh_hash_range"] = c.olh_hash_range();
  return j;
}

void WriteCollectionText(std::ostream& out, const dpq::v1::Collection& c) {
  WriteTable(out, {"FIELD", "VALUE"},
             {{"name", c.name()},
              {"mechanism", MechanismName(c.mechanism())},
              {"epsilon", absl::StrCat(FormatNumber(c.epsilon()), " per report")},
              {"domain", absl::StrJoin(c.domain(), ", ")},
              {"reports per client", absl::StrCat(c.reports_per_client())},
              {"reports", absl::StrCat(c.reports())},
              {"created", c.created_at()}});
}

nlohmann::json EstimateToJson(const dpq::v1::EstimateResponse& r) {
  nlohmann::json estimates = nlohmann::json::array();
  for (const auto& e : r.estimates()) {
    estimates.push_back({{"value", e.value()},
                         {"estimate", e.estimate()},
                         {"ci_lower", e.ci_lower()},
                         {"ci_upper", e.ci_upper()},
                         {"standard_error", e.standard_error()}});
  }
  return {{"collection", CollectionToJson(r.collection())},
          {"reports", r.reports()},
          {"confidence", r.confidence()},
          {"estimates", estimates}};
}

void WriteEstimateText(std::ostream& out, const dpq::v1::EstimateResponse& r) {
  out << "collection '" << r.collection().name() << "': " << r.reports() << " reports, "
      << MechanismName(r.collection().mechanism()) << " at epsilon "
      << FormatNumber(r.collection().epsilon()) << " per report; "
      << FormatSignificant(r.confidence() * 100, 4) << "% intervals (each on its own)\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : r.estimates()) {
    const double half = (e.ci_upper() - e.ci_lower()) / 2;
    const double share = r.reports() > 0 ? e.estimate() / static_cast<double>(r.reports()) : 0;
    rows.push_back({e.value(), FormatToPrecision(e.estimate(), half),
                    absl::StrCat("[", FormatToPrecision(e.ci_lower(), half), ", ",
                                 FormatToPrecision(e.ci_upper(), half), "]"),
                    r.reports() > 0 ? absl::StrCat(FormatSignificant(share * 100, 3), "%") : "-"});
  }
  WriteTable(out, {"VALUE", "ESTIMATE", "INTERVAL", "SHARE"}, rows);
}

}  // namespace

int RunCollectionCreate(const GlobalOptions& options, const Output& output,
                        const CollectionCreateArgs& args) {
  absl::StatusOr<dpq::v1::LdpMechanism> mechanism = ParseMechanism(args.mechanism);
  if (!mechanism.ok()) return ReportUsageError(output, mechanism.status());
  dpq::v1::CreateCollectionRequest request;
  request.set_name(args.name);
  for (const std::string& v : args.domain) request.add_domain(v);
  request.set_epsilon(args.epsilon);
  request.set_mechanism(*mechanism);
  request.set_reports_per_client(args.reports_per_client);
  return RunRpc<dpq::v1::Collection>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Collection* response) {
        return CollectionService::NewStub(channel)->CreateCollection(context, request, response);
      },
      CollectionToJson,
      [](std::ostream& out, const dpq::v1::Collection& c) {
        out << "created collection '" << c.name() << "' (" << MechanismName(c.mechanism())
            << ", epsilon " << FormatNumber(c.epsilon()) << " per report, " << c.domain_size()
            << " values, at most " << c.reports_per_client() << " report(s) per client)\n";
      });
}

int RunCollectionList(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListCollectionsRequest request;
  return RunRpc<dpq::v1::ListCollectionsResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListCollectionsResponse* response) {
        return CollectionService::NewStub(channel)->ListCollections(context, request, response);
      },
      [](const dpq::v1::ListCollectionsResponse& r) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& c : r.collections()) list.push_back(CollectionToJson(c));
        return nlohmann::json{{"collections", list}};
      },
      [](std::ostream& out, const dpq::v1::ListCollectionsResponse& r) {
        if (r.collections().empty()) {
          out << "no collections\n";
          return;
        }
        std::vector<std::vector<std::string>> rows;
        for (const auto& c : r.collections()) {
          rows.push_back({c.name(), MechanismName(c.mechanism()), FormatNumber(c.epsilon()),
                          absl::StrCat(c.domain_size()), absl::StrCat(c.reports_per_client()),
                          absl::StrCat(c.reports())});
        }
        WriteTable(out, {"NAME", "MECHANISM", "EPSILON", "VALUES", "PER CLIENT", "REPORTS"}, rows);
      });
}

int RunCollectionShow(const GlobalOptions& options, const Output& output, const std::string& name) {
  dpq::v1::GetCollectionRequest request;
  request.set_name(name);
  return RunRpc<dpq::v1::Collection>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::Collection* response) {
        return CollectionService::NewStub(channel)->GetCollection(context, request, response);
      },
      CollectionToJson, WriteCollectionText);
}

int RunCollectionSubmit(const GlobalOptions& options, const Output& output, const std::string& name,
                        const std::string& client_id, const std::string& value) {
  absl::StatusOr<Connection> connection = Connection::Open(options, kDefaultTimeoutSeconds);
  if (!connection.ok()) return ReportUsageError(output, connection.status());
  std::unique_ptr<CollectionService::Stub> stub = CollectionService::NewStub(connection->channel());
  dpq::v1::Collection collection;
  {
    grpc::ClientContext context;
    connection->Prepare(&context);
    dpq::v1::GetCollectionRequest get;
    get.set_name(name);
    grpc::Status status = stub->GetCollection(&context, get, &collection);
    if (!status.ok()) return ReportRpcError(output, status);
  }
  // The true value stays here: only the randomized report is sent.
  absl::StatusOr<dpq::v1::LdpReport> report = dpq::ldp_client::RandomizeReport(collection, value);
  if (!report.ok()) return ReportUsageError(output, report.status());
  dpq::v1::SubmitReportRequest request;
  request.set_collection(name);
  request.set_client_id(client_id);
  *request.mutable_report() = *std::move(report);
  grpc::ClientContext context;
  connection->Prepare(&context);
  dpq::v1::SubmitReportResponse response;
  grpc::Status status = stub->SubmitReport(&context, request, &response);
  if (!status.ok()) return ReportRpcError(output, status);
  if (output.json) {
    WriteJson(output.out, {{"collection", name},
                           {"client_id", client_id},
                           {"submitted", true},
                           {"mechanism", MechanismName(collection.mechanism())},
                           {"epsilon", collection.epsilon()}});
  } else {
    output.out << "submitted one report to '" << name << "' for client '" << client_id
               << "' (randomized here with " << MechanismName(collection.mechanism())
               << ", epsilon " << FormatNumber(collection.epsilon()) << ")\n";
  }
  return kExitOk;
}

int RunCollectionEstimate(const GlobalOptions& options, const Output& output,
                          const std::string& name, double confidence) {
  dpq::v1::EstimateRequest request;
  request.set_collection(name);
  request.set_confidence(confidence);
  return RunRpc<dpq::v1::EstimateResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::EstimateResponse* response) {
        return CollectionService::NewStub(channel)->Estimate(context, request, response);
      },
      EstimateToJson, WriteEstimateText);
}

// --- command table ------------------------------------------------------------------------------

namespace {

void AddCollectionCreate(CLI::App* collection, CommandLine& command_line) {
  struct CreateFlags {
    CollectionCreateArgs args;
    std::string domain;  // "a,b,c", split into args.domain once parsed
  };
  CreateFlags& create_flags = command_line.Keep<CreateFlags>();
  CollectionCreateArgs& args = create_flags.args;
  CLI::App* create = collection->add_subcommand("create", "create a collection (admin)");
  create->add_option("name", args.name, "collection name")->required();
  create->add_option("--domain", create_flags.domain, "the values, comma-separated: a,b,c")
      ->required();
  create->add_option("--epsilon", args.epsilon, "epsilon of each report")
      ->required()
      ->check(kFinite);
  create->add_option("--mechanism", args.mechanism, "rr, krr, oue or olh")->required();
  create->add_option("--reports-per-client", args.reports_per_client,
                     "the most reports one client id may submit (default 1)");
  create->callback([&create_flags, &command_line] {
    create_flags.args.domain = absl::StrSplit(create_flags.domain, ',');
    command_line.run = [&create_flags](const GlobalOptions& options, const Output& output) {
      return RunCollectionCreate(options, output, create_flags.args);
    };
  });
}

void AddCollectionSubmit(CLI::App* collection, CommandLine& command_line) {
  struct SubmitFlags {
    std::string name, client_id, value;
  };
  SubmitFlags& submit_flags = command_line.Keep<SubmitFlags>();
  CLI::App* submit =
      collection->add_subcommand("submit", "randomize a value here and send only the report");
  submit->add_option("name", submit_flags.name, "collection name")->required();
  submit->add_option("--client-id", submit_flags.client_id, "who reports (limits apply)")
      ->required();
  submit->add_option("--value", submit_flags.value, "the true value (never sent)")->required();
  command_line.RunWhenParsed(
      submit, [&submit_flags](const GlobalOptions& options, const Output& output) {
        return RunCollectionSubmit(options, output, submit_flags.name, submit_flags.client_id,
                                   submit_flags.value);
      });
}

void AddCollectionEstimate(CLI::App* collection, CommandLine& command_line) {
  struct EstimateFlags {
    std::string name;
    double confidence = 0.95;
  };
  EstimateFlags& estimate_flags = command_line.Keep<EstimateFlags>();
  CLI::App* estimate = collection->add_subcommand(
      "estimate", "frequency estimates with intervals (free: post-processing of the reports)");
  estimate->add_option("name", estimate_flags.name, "collection name")->required();
  estimate
      ->add_option("--confidence", estimate_flags.confidence,
                   "confidence of each interval, in (0, 1)")
      ->capture_default_str()
      ->check(kFinite);
  command_line.RunWhenParsed(estimate, [&estimate_flags](const GlobalOptions& options,
                                                         const Output& output) {
    return RunCollectionEstimate(options, output, estimate_flags.name, estimate_flags.confidence);
  });
}

}  // namespace

// Local DP: clients randomize, the server estimates.
void RegisterCollectionCommands(CLI::App& app, CommandLine& command_line) {
  CLI::App* collection = app.add_subcommand(
      "collection", "local-DP collections: clients randomize, the server estimates frequencies");
  collection->require_subcommand(1);
  AddCollectionCreate(collection, command_line);
  command_line.RunWhenParsed(collection->add_subcommand("list", "every collection"),
                             RunCollectionList);
  std::string& show_name = command_line.Keep<std::string>();
  CLI::App* show = collection->add_subcommand("show", "a collection's definition");
  show->add_option("name", show_name, "collection name")->required();
  command_line.RunWhenParsed(show,
                             [&show_name](const GlobalOptions& options, const Output& output) {
                               return RunCollectionShow(options, output, show_name);
                             });
  AddCollectionSubmit(collection, command_line);
  AddCollectionEstimate(collection, command_line);
}

}  // namespace dpqctl
