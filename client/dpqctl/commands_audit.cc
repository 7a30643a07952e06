#include <memory>
#include <string>

#include "client/dpqctl/commands.h"
#include "client/dpqctl/json_output.h"
#include "client/dpqctl/rpc_runner.h"
#include "client/dpqctl/text_output.h"
#include "dpq/v1/dpq.grpc.pb.h"

namespace dpqctl {

int RunAudit(const GlobalOptions& options, const Output& output, const std::string& dataset) {
  dpq::v1::ListAuditRequest request;
  request.set_dataset(dataset);
  return RunRpc<dpq::v1::ListAuditResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListAuditResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->ListAudit(context, request, response);
      },
      ListAuditResponseToJson, WriteListAuditText);
}

int RunAuditVerify(const GlobalOptions& options, const Output& output, const std::string& dataset,
                   bool full) {
  dpq::v1::VerifyAuditRequest request;
  request.set_dataset(dataset);
  request.set_full(full);
  bool verified = true;
  const int rc = RunRpc<dpq::v1::VerifyAuditResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::VerifyAuditResponse* response) {
        grpc::Status status =
            dpq::v1::AdminService::NewStub(channel)->VerifyAudit(context, request, response);
        verified = status.ok() && response->ok();
        return status;
      },
      VerifyAuditResponseToJson, WriteVerifyAuditText);
  if (rc != 0) return rc;
  return verified ? 0 : kExitVerificationFailed;
}

int RunAdminLog(const GlobalOptions& options, const Output& output) {
  dpq::v1::ListAdminLogRequest request;
  return RunRpc<dpq::v1::ListAdminLogResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::ListAdminLogResponse* response) {
        return dpq::v1::AdminService::NewStub(channel)->ListAdminLog(context, request, response);
      },
      ListAdminLogResponseToJson, WriteListAdminLogText);
}

int RunAdminLogVerify(const GlobalOptions& options, const Output& output, bool full) {
  dpq::v1::VerifyAdminLogRequest request;
  request.set_full(full);
  bool verified = true;
  const int rc = RunRpc<dpq::v1::VerifyAdminLogResponse>(
      options, output, kDefaultTimeoutSeconds,
      [&](const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
          dpq::v1::VerifyAdminLogResponse* response) {
        grpc::Status status =
            dpq::v1::AdminService::NewStub(channel)->VerifyAdminLog(context, request, response);
        verified = status.ok() && response->ok();
        return status;
      },
      VerifyAdminLogResponseToJson, WriteVerifyAdminLogText);
  if (rc != 0) return rc;
  return verified ? 0 : kExitVerificationFailed;
}

}  // namespace dpqctl
