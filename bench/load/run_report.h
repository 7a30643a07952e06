// A run's figures for people (an aligned table) and for programs (one JSON document).
#ifndef DPQ_BENCH_LOAD_RUN_REPORT_H_
#define DPQ_BENCH_LOAD_RUN_REPORT_H_

#include <string>

#include "bench/load/bench_options.h"
#include "bench/load/latency_summary.h"

namespace dpqbench {

// Rows "label  value unit", values rounded to 3 significant digits, ending in a newline.
std::string FormatTable(const BenchOptions& options, const RunFigures& figures);

// {"throughput": ok/s, "p50", "p90", "p99", "max", "mean" (ms, successful requests),
//  "errors": {"CODE": n}, "requests", "ok", "queries", "cached", "clients", "seconds",
//  "latency_unit": "ms", "mix": "count=1,..."}, ending in a newline.
std::string FormatJson(const BenchOptions& options, const RunFigures& figures);

}  // namespace dpqbench

#endif  // DPQ_BENCH_LOAD_RUN_REPORT_H_
