#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "client/dpqctl/command_table.h"
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

// --- command table ------------------------------------------------------------------------------

namespace {

// `audit verify DATASET` or `audit verify --admin-log`.
CLI::App* AddAuditVerify(CLI::App* audit, CommandLine& command_line) {
  struct VerifyFlags {
    std::string dataset;
    bool admin_log = false, full = false;
  };
  VerifyFlags& verify_flags = command_line.Keep<VerifyFlags>();
  CLI::App* audit_verify = audit->add_subcommand(
      "verify",
      "recompute the audit hash chain and the ledger from the audit rows (exit 4 if broken)");
  audit_verify->add_option("name", verify_flags.dataset, "population, or a dataset of it");
  audit_verify->add_flag("--admin-log", verify_flags.admin_log,
                         "check the admin log's hash chain instead");
  audit_verify->add_flag("--full", verify_flags.full,
                         "read the whole chain from its first row (default: only the rows appended "
                         "since the last verified row, which must still hold its hash)");
  audit_verify->callback([&verify_flags, &command_line] {
    if (verify_flags.admin_log == !verify_flags.dataset.empty()) {
      throw CLI::RequiredError("audit verify needs a DATASET or --admin-log (one of them)");
    }
    command_line.run = [&verify_flags](const GlobalOptions& options, const Output& output) {
      return verify_flags.admin_log
                 ? RunAdminLogVerify(options, output, verify_flags.full)
                 : RunAuditVerify(options, output, verify_flags.dataset, verify_flags.full);
    };
  });
  return audit_verify;
}

}  // namespace

void RegisterAuditCommands(CLI::App& app, CommandLine& command_line) {
  struct AuditFlags {
    std::string dataset;
    bool admin_log = false;
  };
  AuditFlags& audit_flags = command_line.Keep<AuditFlags>();
  CLI::App* audit = app.add_subcommand(
      "audit",
      "a dataset's budget allocations, oldest first (`audit verify DATASET` checks them); "
      "--admin-log: every admin action");
  audit->require_subcommand(0, 1);
  audit->add_option("name", audit_flags.dataset, "population, or a dataset of it");
  audit->add_flag("--admin-log", audit_flags.admin_log,
                  "list the admin log (dataset, analyst, grant, token and budget changes) instead");
  CLI::App* audit_verify = AddAuditVerify(audit, command_line);
  audit->callback([audit_verify, &audit_flags, &command_line] {
    if (audit_verify->parsed()) return;
    if (audit_flags.admin_log == !audit_flags.dataset.empty()) {
      throw CLI::RequiredError("audit needs a DATASET or --admin-log (one of them)");
    }
    command_line.run = [&audit_flags](const GlobalOptions& options, const Output& output) {
      return audit_flags.admin_log ? RunAdminLog(options, output)
                                   : RunAudit(options, output, audit_flags.dataset);
    };
  });
}

}  // namespace dpqctl
