// Local-DP collections, one call per operation: validate the request, then one store call (and for
// estimates, the support tally and the Wang et al. 2017 estimator). Sits between store and api, as
// engine/ does for central-DP queries.
#ifndef DPQ_SERVER_COLLECTION_COLLECTIONS_H_
#define DPQ_SERVER_COLLECTION_COLLECTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/dp/ldp/frequency_estimate.h"
#include "server/dp/ldp/frequency_oracle.h"
#include "server/store/audit_chain.h"
#include "server/store/collection_store.h"

namespace dpq::collection {

// Limits on what a collection may declare.
inline constexpr int kMaxDomainValueBytes = 64;
inline constexpr int kMaxClientIdBytes = 128;
inline constexpr int32_t kMaxReportsPerClient = 1'000'000;

struct CollectionEstimate {
  store::CollectionRecord collection;
  int64_t reports = 0;  // the n the estimates are computed from (one snapshot)
  double confidence = 0;
  std::vector<dp::ldp::FrequencyEstimate> estimates;  // in domain order
};

class Collections {
 public:
  explicit Collections(store::CollectionStore* store) : store_(store) {}

  // INVALID_ARGUMENT naming the field: "name" (an identifier), "domain" (2..1024 distinct values
  // of 1..64 printable bytes; exactly 2 for rr), "epsilon" (in (0, 20]), "reports_per_client"
  // (1..1e6). ALREADY_EXISTS for a taken name.
  absl::StatusOr<store::CollectionRecord> Create(const store::CollectionSpec& spec,
                                                 const store::AdminAction* log = nullptr);
  absl::StatusOr<store::CollectionRecord> Get(const std::string& name);
  absl::StatusOr<std::vector<store::CollectionRecord>> List();

  // Checks the name, finds the collection (NOT_FOUND), checks "client_id" (1..128 printable ASCII
  // characters without spaces) and the report against the collection's mechanism
  // (INVALID_ARGUMENT), then stores it (RESOURCE_EXHAUSTED over the client's limit).
  // `found` (may be null) is set to whether the collection exists, for the metrics label.
  absl::Status Submit(const std::string& name, const std::string& client_id,
                      const dp::ldp::LdpReport& report, bool* found = nullptr);

  // Frequency estimates with intervals at `confidence` (in (0, 1)) from every report stored.
  // DEADLINE_EXCEEDED when `deadline` passes while the reports are read.
  absl::StatusOr<CollectionEstimate> Estimate(const std::string& name, double confidence,
                                              absl::Time deadline = absl::InfiniteFuture());

 private:
  store::CollectionStore* store_;
};

// The oracle of a stored collection (its spec was validated at creation).
absl::StatusOr<dp::ldp::FrequencyOracle> OracleOf(const store::CollectionSpec& spec);

}  // namespace dpq::collection

#endif  // DPQ_SERVER_COLLECTION_COLLECTIONS_H_
