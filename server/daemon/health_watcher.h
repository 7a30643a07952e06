// gRPC health that tells the truth: SERVING only while the database answers and its
// schema is the one this binary knows; NOT_SERVING otherwise, and SERVING again once it recovers.
#ifndef DPQ_SERVER_DAEMON_HEALTH_WATCHER_H_
#define DPQ_SERVER_DAEMON_HEALTH_WATCHER_H_

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/health_check_service_interface.h>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/store/principal_store.h"

namespace dpq::daemon {

class HealthWatcher {
 public:
  // Checks every `interval`: the database answers and its schema version equals
  // `binary_schema_version` (migrations behind or ahead: NOT_SERVING). The status is set for the
  // server as a whole ("") and for each of `services` (full names, e.g. "dpq.v1.AnalystService").
  HealthWatcher(grpc::HealthCheckServiceInterface* health, store::PrincipalStore* principals,
                int64_t binary_schema_version, absl::Duration interval,
                std::vector<std::string> services);
  ~HealthWatcher();  // Stop()

  HealthWatcher(const HealthWatcher&) = delete;
  HealthWatcher& operator=(const HealthWatcher&) = delete;

  // Checks once now (so the status is right before the first client asks), then in the background.
  void Start();
  // Ends the background checks; idempotent.
  void Stop();

 private:
  void CheckOnce();

  grpc::HealthCheckServiceInterface* health_;
  store::PrincipalStore* principals_;
  const int64_t binary_schema_version_;
  const absl::Duration interval_;
  const std::vector<std::string> services_;
  absl::Notification stop_;
  std::thread thread_;
  int serving_ = -1;  // -1 unknown, 0 NOT_SERVING, 1 SERVING (the checking thread's own state)
};

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_HEALTH_WATCHER_H_
