#include "server/engine/admin/dataset_admin.h"

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "server/base/status_macros.h"
#include "server/engine/admin/admin_action.h"

namespace dpq::engine {

absl::StatusOr<store::CreatedDataset> DatasetAdmin::Create(const store::Principal& admin,
                                                           const query::DatasetSchema& schema,
                                                           const UploadRowsFor& rows_for) {
  RETURN_IF_ERROR(query::ValidateNewDataset(schema));
  const store::CopyLineSource rows = rows_for(schema.columns);
  const store::AdminAction log =
      Logged(admin, "dataset.create", schema.name,
             schema.is_public
                 // The admin's statement that the rows are not personal is what the log must keep.
                 ? absl::StrCat("public=true (stated not personal) columns=", schema.columns.size())
                 : absl::StrCat("privacy_unit=", schema.privacy_unit, " population=",
                                schema.population.empty() ? schema.name : schema.population,
                                " columns=", schema.columns.size()));
  return datasets_->Create(schema, rows, &log);
}

absl::StatusOr<store::CreatedDataset> DatasetAdmin::Load(const store::Principal& admin,
                                                         const std::string& name,
                                                         const UploadRowsFor& rows_for) {
  ASSIGN_OR_RETURN(query::DatasetSchema schema, datasets_->Get(name));
  const store::CopyLineSource rows = rows_for(schema.columns);
  const store::AdminAction log = Logged(admin, "dataset.load", schema.name);
  store::CreatedDataset loaded;
  ASSIGN_OR_RETURN(loaded.rows_loaded, datasets_->Append(schema, rows, &log));
  ASSIGN_OR_RETURN(loaded.schema, datasets_->Get(name));
  return loaded;
}

absl::Status DatasetAdmin::Drop(const store::Principal& admin, const std::string& name,
                                bool confirmed) {
  if (!confirmed) {
    return absl::FailedPreconditionError(
        "dropping deletes the raw rows irrecoverably: set confirm (dpqctl --yes)");
  }
  ASSIGN_OR_RETURN(query::DatasetSchema schema, datasets_->Get(name));
  const store::AdminAction log = Logged(admin, "dataset.drop", schema.name);
  return datasets_->Drop(schema, &log);
}

absl::StatusOr<std::vector<query::DatasetSchema>> DatasetAdmin::Visible(
    const store::Principal& principal) {
  absl::optional<int64_t> only_granted;
  if (principal.role != store::Role::kAdmin) only_granted = principal.id;
  return datasets_->List(only_granted);
}

}  // namespace dpq::engine
