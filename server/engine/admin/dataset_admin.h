// The admin's dataset actions (create, load, drop) and the list of datasets a principal sees.
// Each mutating action appends its admin-log entry in the same transaction as the change
// (store/dataset_store.h). No gRPC: api/admin_service.cc streams the upload and converts protos.
#ifndef DPQ_SERVER_ENGINE_ADMIN_DATASET_ADMIN_H_
#define DPQ_SERVER_ENGINE_ADMIN_DATASET_ADMIN_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/store/dataset_store.h"
#include "server/store/principal_store.h"

namespace dpq::engine {

// Opens the rows of an upload for a dataset with `columns`: the source the store pulls COPY
// lines from inside its transaction, so the file streams from the client without being held.
using UploadRowsFor =
    std::function<store::CopyLineSource(const std::vector<query::ColumnSchema>& columns)>;

class DatasetAdmin {
 public:
  explicit DatasetAdmin(store::DatasetStore* datasets) : datasets_(datasets) {}

  // Validates the new `schema` (query::ValidateNewDataset), then creates it with the upload's
  // rows in one transaction, logged as "dataset.create".
  absl::StatusOr<store::CreatedDataset> Create(const store::Principal& admin,
                                               const query::DatasetSchema& schema,
                                               const UploadRowsFor& rows_for);
  // Appends the upload's rows to the dataset `name`, logged as "dataset.load": the dataset as it
  // is afterwards and the rows appended.
  absl::StatusOr<store::CreatedDataset> Load(const store::Principal& admin, const std::string& name,
                                             const UploadRowsFor& rows_for);
  // Deletes the dataset `name` and its raw rows, logged as "dataset.drop"; FAILED_PRECONDITION
  // unless `confirmed`.
  absl::Status Drop(const store::Principal& admin, const std::string& name, bool confirmed);
  // The datasets `principal` may query: every one for an admin, the granted ones for an analyst.
  absl::StatusOr<std::vector<query::DatasetSchema>> Visible(const store::Principal& principal);

 private:
  store::DatasetStore* datasets_;
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_ADMIN_DATASET_ADMIN_H_
