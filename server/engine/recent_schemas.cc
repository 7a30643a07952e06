#include "server/engine/recent_schemas.h"

namespace dpq::engine {

std::shared_ptr<const query::DatasetSchema> RecentSchemas::Find(const std::string& dataset) const {
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(dataset);
  return it == by_name_.end() ? nullptr : it->second;
}

void RecentSchemas::Remember(const query::DatasetSchema& schema) {
  auto copy = std::make_shared<const query::DatasetSchema>(schema);
  absl::MutexLock lock(&mu_);
  if (by_name_.size() >= capacity_ && !by_name_.contains(schema.name)) by_name_.clear();
  by_name_[schema.name] = std::move(copy);
}

}  // namespace dpq::engine
