#include "server/daemon/health_watcher.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/logging.h"

namespace dpq::daemon {

HealthWatcher::HealthWatcher(grpc::HealthCheckServiceInterface* health,
                             store::PrincipalStore* principals, int64_t binary_schema_version,
                             absl::Duration interval, std::vector<std::string> services)
    : health_(health),
      principals_(principals),
      binary_schema_version_(binary_schema_version),
      interval_(interval),
      services_(std::move(services)) {}

HealthWatcher::~HealthWatcher() { Stop(); }

void HealthWatcher::Start() {
  CheckOnce();
  thread_ = std::thread([this] {
    while (!stop_.WaitForNotificationWithTimeout(interval_)) CheckOnce();
  });
}

void HealthWatcher::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void HealthWatcher::CheckOnce() {
  absl::StatusOr<int64_t> version = principals_->SchemaVersion();
  std::string why;
  if (!version.ok()) {
    why = absl::StrCat("database unreachable: ", version.status().message());
  } else if (*version != binary_schema_version_) {
    why = absl::StrCat("database schema version ", *version, ", this dpqd needs ",
                       binary_schema_version_);
  }
  const int serving = why.empty() ? 1 : 0;
  if (serving == serving_) return;
  serving_ = serving;
  health_->SetServingStatus("", serving == 1);
  for (const std::string& service : services_) health_->SetServingStatus(service, serving == 1);
  if (serving == 1) {
    LogInfo("health: SERVING (database reachable, schema current)");
  } else {
    LogWarning(absl::StrCat("health: NOT_SERVING (", why, ")"));
  }
}

}  // namespace dpq::daemon
