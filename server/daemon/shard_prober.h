// dpqd's background probe of the shard servers: every interval, each live shard is probed through
// the coordinator (store::ShardStore::ProbeAll, the path scans will take) and the result is handed
// to the metrics (dpq_shard_up, dpq_shard_probe_seconds) and so to the status page.
#ifndef DPQ_SERVER_DAEMON_SHARD_PROBER_H_
#define DPQ_SERVER_DAEMON_SHARD_PROBER_H_

#include <map>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/metrics/metrics.h"
#include "server/store/shard_store.h"

namespace dpq::daemon {

class ShardProber {
 public:
  ShardProber(store::ShardStore* shards, metrics::Metrics* metrics, absl::Duration interval)
      : shards_(shards), metrics_(metrics), interval_(interval) {}
  ~ShardProber();  // Stop()

  ShardProber(const ShardProber&) = delete;
  ShardProber& operator=(const ShardProber&) = delete;

  // Probes once now, then every interval in the background.
  void Start();
  // Ends the background probes (waits for one in progress, at most the probe timeout per shard);
  // idempotent.
  void Stop();

 private:
  void ProbeOnce();

  store::ShardStore* shards_;
  metrics::Metrics* metrics_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::thread thread_;
  std::map<std::string, bool> was_up_;  // the probing thread's own: logs changes only
};

}  // namespace dpq::daemon

#endif  // DPQ_SERVER_DAEMON_SHARD_PROBER_H_
