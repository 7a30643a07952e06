// Local-DP collections: create, list, show, submit (randomized here, before sending), estimate.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

}  // namespace dpqctl
