#include "bench/load/latency_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dpqbench {

double NearestRankPercentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double n = static_cast<double>(sorted.size());
  // ceil(p/100 * n) as a 1-based rank; the small slack keeps 0.9 * 10 == 9 from rounding up to 10.
  double rank = std::ceil(p / 100.0 * n - 1e-9);
  rank = std::clamp(rank, 1.0, n);
  return sorted[static_cast<size_t>(rank) - 1];
}

LatencySummary Summarize(std::vector<double>* samples) {
  LatencySummary s;
  if (samples->empty()) return s;
  std::sort(samples->begin(), samples->end());
  s.samples = static_cast<int64_t>(samples->size());
  s.p50 = NearestRankPercentile(*samples, 50);
  s.p90 = NearestRankPercentile(*samples, 90);
  s.p99 = NearestRankPercentile(*samples, 99);
  s.max = samples->back();
  s.mean = std::accumulate(samples->begin(), samples->end(), 0.0) / samples->size();
  return s;
}

}  // namespace dpqbench
