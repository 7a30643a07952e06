#include "server/store/result_cache.h"

#include <pqxx/pqxx>

#include "server/base/status_macros.h"

namespace dpq::store {

absl::StatusOr<absl::optional<std::string>> ResultCache::FindRequestId(int64_t dataset_id,
                                                                       const std::string& fingerprint,
                                                                       int64_t dataset_version,
                                                                       int64_t principal_id) {
  absl::optional<std::string> id;
  RETURN_IF_ERROR(db_->Run("result cache", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips (it runs on every query).
    pqxx::nontransaction tx(c);
    // Served by the audit_cache_lookup index (migration 0005); the principal and the release are
    // filters on its few matches.
    pqxx::result r = tx.exec_params(
        "SELECT a.request_id FROM audit a LEFT JOIN releases r USING (dataset_id, seq) "
        "WHERE a.dataset_id = $1 AND a.fingerprint = $2 AND a.dataset_version = $3 "
        "AND a.principal_id = $4 AND (NOT a.release_deferred OR r.seq IS NOT NULL) "
        "ORDER BY a.seq LIMIT 1",
        dataset_id, fingerprint, dataset_version, principal_id);
    id = r.empty() ? absl::nullopt : absl::make_optional(r[0][0].as<std::string>());
    return absl::OkStatus();
  }));
  return id;
}

}  // namespace dpq::store
