#include "server/store/result_cache.h"

#include <pqxx/pqxx>

#include "server/base/status_macros.h"

namespace dpq::store {

absl::StatusOr<absl::optional<CacheHit>> ResultCache::Probe(int64_t population_id,
                                                            const std::string& fingerprint,
                                                            int64_t dataset_version,
                                                            int64_t principal_id,
                                                            const std::string& own_request_id) {
  absl::optional<CacheHit> hit;
  RETURN_IF_ERROR(db_->Run("result cache", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips (it runs on every query).
    pqxx::nontransaction tx(c);
    // Served by the audit_cache_lookup index (migration 0005); the principal, the release and the
    // own id are filters on its few matches. Request ids are never empty, so "" matches no row.
    pqxx::result r = tx.exec_params(
        "SELECT a.request_id, a.request_id = $5 FROM audit a LEFT JOIN releases r USING (population_id, seq) "
        "WHERE a.population_id = $1 AND a.fingerprint = $2 AND a.dataset_version = $3 "
        "AND a.principal_id = $4 AND (NOT a.release_deferred OR r.seq IS NOT NULL OR a.request_id = $5) "
        "ORDER BY a.request_id = $5 DESC, a.seq LIMIT 1",
        population_id, fingerprint, dataset_version, principal_id, own_request_id);
    if (!r.empty()) hit = CacheHit{r[0][0].as<std::string>(), r[0][1].as<bool>()};
    return absl::OkStatus();
  }));
  return hit;
}

}  // namespace dpq::store
