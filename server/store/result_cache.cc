#include "server/store/result_cache.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"

namespace dpq::store {

// Served by the audit_cache_lookup index (migration 0005); the principal, the release and the own
// id are filters on its few matches. Request ids are never empty, so '' matches no row.
std::string CacheProbeSql(absl::string_view population_id, absl::string_view fingerprint,
                          absl::string_view dataset_version, absl::string_view principal_id,
                          absl::string_view own_request_id) {
  return absl::StrCat(
      "SELECT a.request_id, a.request_id = ", own_request_id,
      " AS own FROM audit a LEFT JOIN releases r USING (population_id, seq) WHERE a.population_id "
      "= ",
      population_id, " AND a.fingerprint = ", fingerprint,
      " AND a.dataset_version = ", dataset_version, " AND a.principal_id = ", principal_id,
      " AND (NOT a.release_deferred OR r.seq IS NOT NULL OR a.request_id = ", own_request_id,
      ") ORDER BY a.request_id = ", own_request_id, " DESC, a.seq LIMIT 1");
}

absl::StatusOr<absl::optional<CacheHit>> ResultCache::Probe(int64_t population_id,
                                                            const std::string& fingerprint,
                                                            int64_t dataset_version,
                                                            int64_t principal_id,
                                                            const std::string& own_request_id) {
  absl::optional<CacheHit> hit;
  RETURN_IF_ERROR(db_->Run("result cache", [&](pqxx::connection& c) {
    // One statement: autocommit, no BEGIN/ROLLBACK round trips (it runs on every query).
    pqxx::nontransaction tx(c);
    static const std::string* const sql =
        new std::string(CacheProbeSql("$1", "$2", "$3", "$4", "$5"));
    pqxx::result r = tx.exec_params(*sql, population_id, fingerprint, dataset_version, principal_id,
                                    own_request_id);
    if (!r.empty()) hit = CacheHit{r[0][0].as<std::string>(), r[0][1].as<bool>()};
    return absl::OkStatus();
  }));
  return hit;
}

}  // namespace dpq::store
