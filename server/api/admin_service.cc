// AdminService: datasets (create, load, drop), principals and grants (create, grant), budgets and
// the budget audit. Thin handlers: authenticate, proto -> domain, one engine-level call, proto out.
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/api/proto_convert.h"
#include "server/api/services.h"
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
        return absl::InvalidArgumentError(
            "only csv_chunk messages and one `end` may follow the header");
      }
      bytes_ += static_cast<int64_t>(message_.csv_chunk().size());
      if (limits_.max_bytes > 0 && bytes_ > limits_.max_bytes) {
        return LimitError(absl::StrCat("the upload is larger than ", limits_.max_bytes,
                                       " bytes (dpqd --max-load-mb): nothing was loaded; split the "
                                       "file and load the parts with `dpqctl dataset load`"));
      }
      RETURN_IF_ERROR(encoder_.Feed(message_.csv_chunk(), lines));
      if (limits_.max_rows > 0 && encoder_.rows() > limits_.max_rows) {
        return LimitError(
            absl::StrCat("the upload has more than ", limits_.max_rows,
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

// engine::UploadRowsFor over the CSV chunks that follow the header; `upload` keeps the open upload
// alive while the store pulls from it.
engine::UploadRowsFor CsvRowsOf(grpc::ServerContext* context,
                                grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                                UploadLimits limits, std::unique_ptr<CsvUpload>* upload) {
  return [=](const std::vector<query::ColumnSchema>& columns) {
    *upload = std::make_unique<CsvUpload>(context, reader, columns, limits);
    return (*upload)->Source();
  };
}

}  // namespace

grpc::Status AdminService::LoadDataset(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                                       v1::CreateDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    ASSIGN_OR_RETURN(v1::DatasetHeader header, ReadHeader(reader));
    RETURN_IF_ERROR(ValidateIdentifier(header.name(), "header.name"));
    std::unique_ptr<CsvUpload> upload;
    ASSIGN_OR_RETURN(store::CreatedDataset loaded,
                     options_.datasets->Load(admin, header.name(),
                                             CsvRowsOf(context, reader, options_.upload, &upload)));
    ToProto(loaded.schema, response->mutable_dataset());
    response->set_rows_loaded(loaded.rows_loaded);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::DropDataset(grpc::ServerContext* context,
                                       const v1::DropDatasetRequest* request,
                                       v1::DropDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateIdentifier(request->name(), "name"));
    return options_.datasets->Drop(admin, request->name(), request->confirm());
  }());
}

grpc::Status AdminService::CreateDataset(grpc::ServerContext* context,
                                         grpc::ServerReader<v1::CreateDatasetRequest>* reader,
                                         v1::CreateDatasetResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    ASSIGN_OR_RETURN(v1::DatasetHeader header, ReadHeader(reader));
    ASSIGN_OR_RETURN(query::DatasetSchema schema, DatasetSchemaFromProto(header));
    std::unique_ptr<CsvUpload> upload;
    ASSIGN_OR_RETURN(store::CreatedDataset created,
                     options_.datasets->Create(
                         admin, schema, CsvRowsOf(context, reader, options_.upload, &upload)));
    ToProto(created.schema, response->mutable_dataset());
    response->set_rows_loaded(created.rows_loaded);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::CreateAnalyst(grpc::ServerContext* context,
                                         const v1::CreateAnalystRequest* request,
                                         v1::CreateAnalystResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateAnalystName(request->name(), "name"));
    store::Role role;
    switch (request->role()) {
      case v1::ROLE_UNSPECIFIED:
      case v1::ROLE_ANALYST: role = store::Role::kAnalyst; break;
      case v1::ROLE_ADMIN: role = store::Role::kAdmin; break;
      default: return absl::InvalidArgumentError("role is not known");
    }
    ASSIGN_OR_RETURN(engine::IssuedToken issued,
                     options_.access->CreatePrincipal(admin, request->name(), role));
    ToProto(issued, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::Grant(grpc::ServerContext* context, const v1::GrantRequest* request,
                                 v1::GrantResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    RETURN_IF_ERROR(ValidateAnalystName(request->analyst(), "analyst"));
    RETURN_IF_ERROR(ValidateIdentifier(request->dataset(), "dataset"));
    engine::GrantCaps caps;
    if (request->has_epsilon_cap()) caps.epsilon_cap = request->epsilon_cap();
    if (request->has_delta_cap()) caps.delta_cap = request->delta_cap();
    return options_.access->Grant(admin, request->analyst(), request->dataset(), caps);
  }());
}

grpc::Status AdminService::SetBudget(grpc::ServerContext* context,
                                     const v1::SetBudgetRequest* request, v1::Budget* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(store::Principal admin, AuthenticateAdmin(*options_.auth, *context));
    engine::BudgetChange change;
    change.dataset = request->dataset();
    change.epsilon = request->epsilon();
    change.delta = request->delta();
    change.accountant = request->accountant();
    change.preset = request->preset();
    if (request->has_max_query_epsilon()) change.max_query_epsilon = request->max_query_epsilon();
    change.per_block = request->per_block();
    change.block = request->block();
    ASSIGN_OR_RETURN(engine::DatasetBudget budget, options_.budgets->Set(admin, change));
    ToProto(budget, response);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::ListAudit(grpc::ServerContext* context,
                                     const v1::ListAuditRequest* request,
                                     v1::ListAuditResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(engine::AuditListing listing, options_.audit->ListAudit(request->dataset()));
    for (const auto& e : listing.entries) ToProto(e, response->add_entries());
    response->set_population(listing.population);
    response->set_via_dataset(listing.via_dataset);
    return absl::OkStatus();
  }());
}

grpc::Status AdminService::VerifyAudit(grpc::ServerContext* context,
                                       const v1::VerifyAuditRequest* request,
                                       v1::VerifyAuditResponse* response) {
  return ToGrpcStatus(*context, [&]() -> absl::Status {
    RETURN_IF_ERROR(AuthenticateAdmin(*options_.auth, *context).status());
    ASSIGN_OR_RETURN(engine::AuditVerification verified,
                     options_.audit->VerifyAudit(request->dataset(), request->full()));
    const store::BudgetLedger::Verification& v = verified.result;
    if (options_.metrics != nullptr) {  // dpq_audit_verify_ok / _timestamp_seconds (alerts.yml)
      options_.metrics->RecordAuditVerify(verified.population, v.ok,
                                          absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
      options_.metrics->RecordAuditVerifyRows(verified.population, v.rows_read);
    }
    response->set_population(verified.population);
    response->set_via_dataset(verified.via_dataset);
    response->set_ok(v.ok);
    response->set_entries(v.entries);
    response->set_first_broken_seq(v.first_broken_seq);
    response->set_reason(v.reason);
    response->set_epsilon_spent_recomputed(
        query::EpsilonFromUnits(v.epsilon_spent_recomputed_units));
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
