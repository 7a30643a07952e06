// Local-DP collections (migration 0011): their definition, the per-client report counts that
// enforce the limit, and the reports themselves. Reports are stored as sent; no true value ever
// reaches this table (the client randomized before sending).
#ifndef DPQ_SERVER_STORE_COLLECTION_STORE_H_
#define DPQ_SERVER_STORE_COLLECTION_STORE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/dp/ldp/frequency_oracle.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace dpq::store {

// What an admin declares at creation; fixed afterwards.
struct CollectionSpec {
  std::string name;
  std::vector<std::string> domain;  // values in index order
  double epsilon = 0;               // per report
  dp::ldp::LdpMechanism mechanism = dp::ldp::LdpMechanism::kKrr;
  int32_t reports_per_client = 1;
};

struct CollectionRecord {
  int64_t id = 0;
  CollectionSpec spec;
  std::string created_at;  // RFC 3339 UTC
  int64_t reports = 0;     // received so far
};

class CollectionStore {
 public:
  explicit CollectionStore(Database* db) : db_(db) {}

  // `spec` must already be validated (name, domain, epsilon, mechanism, limit). ALREADY_EXISTS for
  // a taken name. `log` is appended to the admin log in the same transaction.
  absl::StatusOr<CollectionRecord> Create(const CollectionSpec& spec,
                                          const AdminAction* log = nullptr);
  // NOT_FOUND for an unknown name.
  absl::StatusOr<CollectionRecord> Get(const std::string& name);
  // Every collection, by name.
  absl::StatusOr<std::vector<CollectionRecord>> List();

  // Stores `report` (already validated against the collection) for `client_id`, in one
  // transaction with the client's count: RESOURCE_EXHAUSTED, and nothing stored, when the client
  // already submitted reports_per_client reports. Concurrent submissions of one client serialise
  // on its count row, so at most reports_per_client ever commit.
  absl::Status Submit(const CollectionRecord& collection, const std::string& client_id,
                      const dp::ldp::LdpReport& report);

  // Calls `visit` with every report of the collection, in one snapshot (REPEATABLE READ), fetched
  // in pages so memory stays bounded. Returns the number of reports visited; DEADLINE_EXCEEDED when
  // `deadline` passes before the last page (checked between pages).
  absl::StatusOr<int64_t> ForEachReport(int64_t collection_id,
                                        const std::function<void(const dp::ldp::LdpReport&)>& visit,
                                        absl::Time deadline = absl::InfiniteFuture());

 private:
  Database* db_;
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_COLLECTION_STORE_H_
