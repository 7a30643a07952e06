// Datasets: their schema (columns, types, declared bounds) and their raw rows. Raw rows live in
// dpq_data.ds_<id>; the table name comes from the numeric id, column names from the validated
// schema, never from request text.
#ifndef DPQ_SERVER_STORE_DATASET_STORE_H_
#define DPQ_SERVER_STORE_DATASET_STORE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/query/dataset_schema.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"
#include "server/store/result_cache.h"

namespace dpq::store {

// Pulls the next batch of rows in COPY text format (lines ending in '\n') into *lines. Returns
// false once the input is exhausted.
using CopyLineSource = std::function<absl::StatusOr<bool>(std::string* lines)>;

struct CreatedDataset {
  query::DatasetSchema schema;
  int64_t rows_loaded = 0;
};

// Mutating calls take an optional AdminAction: when given, it is appended to the admin log
// (admin_log.h) in the same transaction as the change.
class DatasetStore {
 public:
  explicit DatasetStore(Database* db) : db_(db) {}

  // Creates the dataset (schema row, columns, a zero budget ledger, the data table) and loads all
  // rows from `source` with COPY, in one transaction: on any error nothing exists afterwards.
  // `schema` must already be validated (identifiers, types, bounds). ALREADY_EXISTS for a taken
  // name.
  absl::StatusOr<CreatedDataset> Create(const query::DatasetSchema& schema,
                                        const CopyLineSource& source,
                                        const AdminAction* log = nullptr);

  // Appends all rows from `source` to the dataset's table with COPY and bumps its version, in one
  // transaction. Returns the number of rows appended.
  absl::StatusOr<int64_t> Append(const query::DatasetSchema& schema, const CopyLineSource& source,
                                 const AdminAction* log = nullptr);

  // Drops the raw-row table and marks the dataset dropped; ledger and audit rows stay.
  absl::Status Drop(const query::DatasetSchema& schema, const AdminAction* log = nullptr);

  // Records the domain preset of the population's budget (query/epsilon_guidance.h); "" clears it.
  absl::Status SetEpsilonPreset(int64_t population_id, const std::string& preset);

  // NOT_FOUND for an unknown name, or a dropped dataset unless include_dropped.
  absl::StatusOr<query::DatasetSchema> Get(const std::string& name, bool include_dropped = false);

  // The first statement of a query: as Get (never a dropped dataset), and whether the caller holds
  // an unrevoked grant on it (PrincipalStore::HasGrant's condition), whether its token still names
  // it, and the result cache's answer, in one round trip.
  struct QueryCaller {
    int64_t principal_id = 0;
    // Set when the caller was admitted on a remembered principal (Principal::token_to_confirm):
    // the statement confirms that this token hash still names the principal, unrevoked.
    std::string token_sha256_to_confirm;
    // Set for a request id the server drew: the result cache is probed for this fingerprint on
    // the population and the dataset version the statement reads (ResultCache::Probe's rule).
    std::string probe_fingerprint;
  };
  struct Granted {
    query::DatasetSchema schema;
    bool granted = false;
    bool caller_confirmed = true;  // false: the token to confirm no longer names the principal
    absl::optional<ProbedCache> probed;  // set iff a probe fingerprint was given
  };
  // NOT_FOUND for an unknown or dropped dataset (nothing else is read then: the caller confirms
  // the token on its own before it says so).
  absl::StatusOr<Granted> GetWithGrant(const std::string& name, const QueryCaller& caller);

  // All datasets, or only those granted to `principal_id` when it is set.
  absl::StatusOr<std::vector<query::DatasetSchema>> List(absl::optional<int64_t> principal_id);

 private:
  Database* db_;
};

// "dpq_data.ds_<id>": the only way a data table is named.
std::string DataTableName(int64_t dataset_id);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DATASET_STORE_H_
