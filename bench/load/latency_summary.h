// Order statistics of a run's latencies, and the run's figures as one record.
#ifndef DPQ_BENCH_LOAD_LATENCY_SUMMARY_H_
#define DPQ_BENCH_LOAD_LATENCY_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dpqbench {

// The p-th percentile (0 < p <= 100) of `sorted` (ascending, non-empty) by the nearest-rank
// method: the smallest sample with at least p % of the samples at or below it, i.e. the
// ceil(p/100 * n)-th (Hyndman & Fan 1996, definition 1). Always an observed value, so a p99 of
// 100 samples is the second largest, never an interpolation. 0 for an empty vector.
double NearestRankPercentile(const std::vector<double>& sorted, double p);

struct LatencySummary {
  int64_t samples = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;  // same unit as the input
};

// Sorts `samples` in place and summarises them.
LatencySummary Summarize(std::vector<double>* samples);

struct RunFigures {
  int clients = 0;
  double seconds = 0;  // from the first send to the last answer
  int64_t requests = 0;
  int64_t ok = 0;
  int64_t cached = 0;   // answers the result cache gave (charged nothing); 0 in a proper run
  int64_t queries = 0;  // answered queries (a batch counts its queries)
  std::map<std::string, int64_t> errors;  // gRPC code name -> count
  LatencySummary latency_ms;              // of successful requests
  double throughput() const { return seconds > 0 ? ok / seconds : 0; }
};

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_LATENCY_SUMMARY_H_
