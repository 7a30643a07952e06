#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "server/api/admin_actions.h"
#include "server/api/proto_convert.h"
#include "server/api/services.h"
#include "server/query/epsilon_guidance.h"
#include "server/api/status_mapping.h"
#include "server/base/limit_error.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/csv_to_copy.h"
#include "server/query/privacy_units.h"

namespace dpq::api {
namespace {

absl::StatusOr<v1::DatasetHeader> ReadHeader(grpc::ServerReader<v1::CreateDatasetRequest>* reader) {
  v1::CreateDatasetRequest message;
  if (!reader->Read(&message) || !message.has_header()) {
    return absl::InvalidArgumentError("the first message of the upload must be the header");
  }
  return message.header();
}

// The CSV chunks that follow the header, validated and encoded as COPY lines. Pulled by the store
// inside its transaction, so the file streams from the client into COPY without being held in
// memory.
// Refuses an upload past `limits` (RESOURCE_EXHAUSTED naming the flag) as soon as the chunk that
// crosses them arrives; the store's transaction then rolls back, so nothing of it is loaded.
class CsvUpload {
 public:
  CsvUpload(grpc::ServerContext* context, grpc::ServerReader<v1::CreateDatasetRequest>* reader,
            std::vector<query::ColumnSchema> columns, UploadLimits limits)
      : context_(context), reader_(reader), encoder_(std::move(columns)), limits_(limits) {}

  store::CopyLineSource Source() {
    return [this](std::string* lines) -> absl::StatusOr<bool> {
      if (finished_) return false;
      if (context_->IsCancelled()) return absl::CancelledError("client cancelled the upload");
      if (!reader_->Read(&message_)) {
        finished_ = true;
        // gRPC's sync reader reports a clean end of stream and a broken one (a lost connection,
        // a message it could not parse or that was too large) alike: only the `end` message
        // tells them apart, so an upload without it commits nothing.
        if (!saw_end_) {
          return absl::InvalidArgumentError(
              "the upload stopped before its `end` message (the connection broke, or a message "
              "was malformed or too large): nothing was loaded; upload the file again");
        }
        RETURN_IF_ERROR(encoder_.Finish(lines));
        return false;
      }
      if (saw_end_) return absl::InvalidArgumentError("no message may follow the upload's `end`");
      if (message_.has_end()) {
        if (message_.end().csv_bytes() != bytes_) {
          return absl::InvalidArgumentError(absl::StrCat(
              "end.csv_bytes is ", message_.end().csv_bytes(), " but ", bytes_,
              " bytes of csv_chunk arrived: nothing was loaded; upload the file again"));
        }
        saw_end_ = true;
        return true;
      }
      if (!message_.has_csv_chunk()) {
        return absl::InvalidArgumentError("only csv_chunk messages and one `end` may follow the header");
      }
      bytes_ += static_cast<int64_t>(message_.csv_chunk().size());
      if (limits_.max_bytes > 0 && bytes_ > limits_.max_bytes) {
        return LimitError(absl::StrCat("the upload is larger than ", limits_.max_bytes,
                                       " bytes (dpqd --max-load-mb): nothing was loaded; split the "
                                       "file and load the parts with `dpqctl dataset load`"));
      }
      RETURN_IF_ERROR(encoder_.Feed(message_.csv_chunk(), lines));
      if (limits_.max_rows > 0 && encoder_.rows() > limits_.max_rows) {
        return LimitError(absl::StrCat("the upload has more than ", limits_.max_rows,
                                       " rows (dpqd --max-load-rows): nothing was loaded; split the "
                                       "file and load the parts with `dpqctl dataset load`"));
      }
      return true;
    };
  }

 private:
  grpc::ServerContext* context_;
  grpc::ServerReader<v1::CreateDatasetRequest>* reader_;
  query::CsvToCopy encoder_;
  v1::CreateDatasetRequest message_;
  const UploadLimits limits_;
  int64_t bytes_ = 0;
  bool saw_end_ = false;
  bool finished_ = false;
};

}  // namespace

grpc::Status AdminService::LoadDataset(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                                       v1::CreateDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    ASSIGN_OR_RETURN(v1::DatasetHeader header, ReadHeader(reader));
    RETURN_IF_ERROR(ValidateIdentifier(header.name(), "header.name"));
    ASSIGN_OR_RETURN(query::DatasetSchema schema, o_.datasets->Get(header.name()));
    CsvUpload upload(context, reader, schema.columns, o_.upload);
    const store::AdminAction log = Logged(admin, "dataset.load", schema.name);
    ASSIGN_OR_RETURN(int64_t appended, o_.datasets->Append(schema, upload.Source(), &log));
    ASSIGN_OR_RETURN(query::DatasetSchema after, o_.datasets->Get(header.name()));
    ToProto(after, response->mutable_dataset());
    response->set_rows_loaded(appended);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::DropDataset(grpc::ServerContext* context,
                                       const v1::DropDatasetRequest* request,
                                       v1::DropDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    if (!request->confirm()) {
      return absl::FailedPreconditionError(
          "dropping deletes the raw rows irrecoverably: set confirm (dpqctl --yes)");
    }
    ASSIGN_OR_RETURN(query::DatasetSchema schema, o_.datasets->Get(request->name()));
    const store::AdminAction log = Logged(admin, "dataset.drop", schema.name);
    return o_.datasets->Drop(schema, &log);
  }());
}

grpc::Status AdminService::CreateDataset(grpc::ServerContext* context,
                                         grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                                         v1::CreateDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    ASSIGN_OR_RETURN(v1::DatasetHeader header, ReadHeader(reader));
    ASSIGN_OR_RETURN(query::DatasetSchema schema, DatasetSchemaFromProto(header));
    RETURN_IF_ERROR(query::ValidateNewDataset(schema));
    CsvUpload upload(context, reader, schema.columns, o_.upload);
    const store::AdminAction log =
        Logged(admin, "dataset.create", schema.name,
               absl::StrCat("privacy_unit=", schema.privacy_unit, " columns=", schema.columns.size()));
    ASSIGN_OR_RETURN(store::CreatedDataset created,
                     o_.datasets->Create(schema, upload.Source(), &log));
    ToProto(created.schema, response->mutable_dataset());
    response->set_rows_loaded(created.rows_loaded);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::CreateAnalyst(grpc::ServerContext* context,
                                         const v1::CreateAnalystRequest* request,
                                         v1::CreateAnalystResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    store::Role role;
    switch (request->role()) {
      case v1::ROLE_UNSPECIFIED:
      case v1::ROLE_ANALYST: role = store::Role::kAnalyst; break;
      case v1::ROLE_ADMIN: role = store::Role::kAdmin; break;
      default: return absl::InvalidArgumentError("role is not known");
    }
    const std::string token = NewToken();
    const store::AdminAction log =
        Logged(admin, "analyst.create", request->name(),
               role == store::Role::kAdmin ? "role=admin" : "role=analyst");
    ASSIGN_OR_RETURN(store::Principal p,
                     o_.principals->Create(request->name(), role, TokenHash(token), &log));
    response->set_name(p.name);
    response->set_role(p.role == store::Role::kAdmin ? v1::ROLE_ADMIN : v1::ROLE_ANALYST);
    response->set_token(token);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::Grant(grpc::ServerContext* context, const v1::GrantRequest* request,
                                 v1::GrantResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    RETURN_IF_ERROR(ValidateAnalystName(request->analyst(), "analyst"));
    RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
    absl::optional<int64_t> epsilon_cap, delta_cap;
    if (request->has_epsilon_cap()) {
      ASSIGN_OR_RETURN(epsilon_cap, query::EpsilonToUnits(request->epsilon_cap(), "epsilon_cap",
                                                          query::kMaxEpsilonBudget));
    }
    if (request->has_delta_cap()) {
      ASSIGN_OR_RETURN(delta_cap, query::DeltaToUnits(request->delta_cap(), "delta_cap"));
    }
    std::string caps;
    if (request->has_epsilon_cap()) caps = absl::StrFormat("epsilon_cap=%.12g", request->epsilon_cap());
    if (request->has_delta_cap()) {
      absl::StrAppend(&caps, caps.empty() ? "" : " ", absl::StrFormat("delta_cap=%.12g", request->delta_cap()));
    }
    const store::AdminAction log =
        Logged(admin, "grant", absl::StrCat(request->analyst(), "/", request->dataset()), caps);
    return o_.principals->Grant(request->analyst(), request->dataset(), epsilon_cap, delta_cap, &log);
  }());
}

grpc::Status AdminService::SetBudget(grpc::ServerContext* context, const v1::SetBudgetRequest* request,
                                     v1::Budget* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, o_.auth->AuthenticateAdmin(*context));
    double epsilon = request->epsilon();
    if (!request->preset().empty()) {
      ASSIGN_OR_RETURN(query::EpsilonPreset preset, query::FindEpsilonPreset(request->preset()));
      if (epsilon == 0) epsilon = preset.upper;  // the largest total the domain usually accepts
    }
    ASSIGN_OR_RETURN(int64_t epsilon_units,
                     query::EpsilonToUnits(epsilon, "epsilon", query::kMaxEpsilonBudget));
    ASSIGN_OR_RETURN(int64_t delta_units, query::DeltaToUnits(request->delta(), "delta"));
    absl::optional<int64_t> max_query_units;
    if (request->has_max_query_epsilon()) {
      max_query_units = 0;
      if (request->max_query_epsilon() != 0) {
        ASSIGN_OR_RETURN(max_query_units, query::EpsilonToUnits(request->max_query_epsilon(),
                                                                "max_query_epsilon",
                                                                query::kMaxEpsilonBudget));
      }
    }
    ASSIGN_OR_RETURN(query::DatasetSchema schema, o_.datasets->Get(request->dataset()));
    const store::AdminAction log = Logged(
        admin, "budget.set", schema.name,
        absl::StrFormat("epsilon=%.12g delta=%.12g accountant=%s preset=%s max_query_epsilon=%s",
                        query::EpsilonFromUnits(epsilon_units), query::DeltaFromUnits(delta_units),
                        request->accountant().empty() ? "(kept)" : request->accountant(),
                        request->preset().empty() ? "(kept)" : request->preset(),
                        !max_query_units.has_value() ? "(kept)"
                        : *max_query_units == 0      ? "none"
                                                     : absl::StrFormat("%.12g", query::EpsilonFromUnits(
                                                                                    *max_query_units))));
    ASSIGN_OR_RETURN(store::BudgetState budget,
                     o_.ledger->Set(schema.id, epsilon_units, delta_units, request->accountant(),
                                    max_query_units, &log));
    std::string preset = schema.epsilon_preset;
    if (!request->preset().empty()) {
      preset = request->preset();
      RETURN_IF_ERROR(o_.datasets->SetEpsilonPreset(schema.id, preset));
    }
    ToProto(budget, response);
    response->set_preset(preset);
    for (const std::string& w : query::BudgetWarnings(budget.epsilon_total(), preset)) {
      response->add_warnings(w);
    }
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListAudit(grpc::ServerContext* context, const v1::ListAuditRequest* request,
                                     v1::ListAuditResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.datasets->Get(request->dataset(), /*include_dropped=*/true));
    ASSIGN_OR_RETURN(auto entries, o_.ledger->ListAllocations(schema.id));
    for (const auto& e : entries) ToProto(e, response->add_entries());
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::VerifyAudit(grpc::ServerContext* context,
                                       const v1::VerifyAuditRequest* request,
                                       v1::VerifyAuditResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(o_.auth->AuthenticateAdmin(*context).status());
    ASSIGN_OR_RETURN(query::DatasetSchema schema,
                     o_.datasets->Get(request->dataset(), /*include_dropped=*/true));
    store::BudgetLedger::VerifyOptions options;
    options.full = request->full();
    ASSIGN_OR_RETURN(store::BudgetLedger::Verification v, o_.ledger->Verify(schema.id, options));
    if (o_.metrics != nullptr) {  // dpq_audit_verify_ok / _timestamp_seconds (alerts.yml)
      o_.metrics->RecordAuditVerify(schema.name, v.ok, absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
      o_.metrics->RecordAuditVerifyRows(schema.name, v.rows_read);
    }
    response->set_ok(v.ok);
    response->set_entries(v.entries);
    response->set_first_broken_seq(v.first_broken_seq);
    response->set_reason(v.reason);
    response->set_epsilon_spent_recomputed(query::EpsilonFromUnits(v.epsilon_spent_recomputed_units));
    response->set_delta_spent_recomputed(query::DeltaFromUnits(v.delta_spent_recomputed_units));
    response->set_epsilon_spent_ledger(query::EpsilonFromUnits(v.epsilon_spent_ledger_units));
    response->set_delta_spent_ledger(query::DeltaFromUnits(v.delta_spent_ledger_units));
    response->set_full(v.full);
    response->set_rows_read(v.rows_read);
    response->set_checkpoint_seq(v.checkpoint_seq);
    return absl::OkStatus();
  }());
}

}  // namespace dpq::api
