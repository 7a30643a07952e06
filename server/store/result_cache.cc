#include "server/store/result_cache.h"

#include <pqxx/pqxx>

#include "server/base/status_macros.h"

namespace dpq::store {

absl::StatusOr<absl::optional<std::string>> ResultCache::FindRequestId(int64_t dataset_id,
                                                                       const std::string& fingerprint,
                                                                       int64_t dataset_version) {
  absl::optional<std::string> id;
  RETURN_IF_ERROR(db_->Run("result cache", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    // Served by the audit_cache_lookup index (migration 0005).
    pqxx::result r = tx.exec_params(
        "SELECT request_id FROM audit WHERE dataset_id = $1 AND fingerprint = $2 "
        "AND dataset_version = $3 ORDER BY seq LIMIT 1",
        dataset_id, fingerprint, dataset_version);
    id = r.empty() ? absl::nullopt : absl::make_optional(r[0][0].as<std::string>());
    return absl::OkStatus();
  }));
  return id;
}

}  // namespace dpq::store
