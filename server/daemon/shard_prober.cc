#include "server/daemon/shard_prober.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/base/logging.h"

namespace dpq::daemon {

ShardProber::~ShardProber() { Stop(); }

void ShardProber::Start() {
  thread_ = std::thread([this] {
    ProbeOnce();
    while (!stop_.WaitForNotificationWithTimeout(interval_)) ProbeOnce();
  });
}

void ShardProber::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void ShardProber::ProbeOnce() {
  absl::StatusOr<std::vector<store::ShardProbe>> probes = shards_->ProbeAll();
  if (!probes.ok()) {
    // The coordinator itself is unreachable: gRPC health reports that; the last figures stay.
    return;
  }
  std::vector<metrics::ShardFigures> figures;
  std::map<std::string, bool> now_up;
  for (const store::ShardProbe& p : *probes) {
    figures.push_back({p.name, p.up, p.seconds});
    now_up[p.name] = p.up;
    auto before = was_up_.find(p.name);
    if (before != was_up_.end() && before->second == p.up) continue;
    if (p.up) {
      LogInfo(absl::StrCat("shard ", p.name, ": up"));
    } else {
      LogWarning(absl::StrCat("shard ", p.name, ": DOWN (", p.error.message(), ")"));
    }
  }
  was_up_ = std::move(now_up);
  metrics_->SetShards(std::move(figures));
}

}  // namespace dpq::daemon
