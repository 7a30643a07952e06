// The last schema this dpqd read for each dataset name, kept for one use: a query's first
// statement (store::DatasetStore::GetWithGrant) probes the result cache in the round trip that
// reads the schema, so the fingerprint it probes for must be known before that schema is. It is
// the fingerprint of the query planned on the schema remembered here: a guess. The engine uses
// the probe's answer only when the plan on the schema just read has the same fingerprint; the
// statement probed on the population and dataset version it read itself. So a stale or missing
// entry costs the separate probe's round trip, never a different answer.
#ifndef DPQ_SERVER_ENGINE_RECENT_SCHEMAS_H_
#define DPQ_SERVER_ENGINE_RECENT_SCHEMAS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/query/dataset_schema.h"

namespace dpq::engine {

class RecentSchemas {
 public:
  // At `capacity` names the map is emptied: each name costs one schema, a name seen once more
  // costs one round trip.
  explicit RecentSchemas(size_t capacity = 1024) : capacity_(capacity) {}

  // The schema last remembered under `dataset`, or null.
  std::shared_ptr<const query::DatasetSchema> Find(const std::string& dataset) const;
  void Remember(const query::DatasetSchema& schema);

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const query::DatasetSchema>> by_name_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_RECENT_SCHEMAS_H_
