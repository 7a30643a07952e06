// Runs one load: --clients threads, each with its own gRPC connection to dpqd, sending the mix
// until --duration or --count runs out, paced to --rate when one is given.
#ifndef DPQ_BENCH_LOAD_LOAD_RUNNER_H_
#define DPQ_BENCH_LOAD_LOAD_RUNNER_H_

#include "absl/status/statusor.h"
#include "bench/load/bench_options.h"
#include "bench/load/latency_summary.h"

namespace dpqbench {

// INVALID_ARGUMENT when the --tls-ca file cannot be read. Errors of the calls themselves are
// counted in RunFigures::errors, never returned: a run against a dpqd that refuses everything
// still reports (and main exits non-zero when nothing succeeded).
absl::StatusOr<RunFigures> RunLoad(const BenchOptions& options);

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_LOAD_RUNNER_H_
