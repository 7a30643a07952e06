// dpq-bench: a multi-threaded gRPC load generator for a dpqd on this machine (see --help and
// bench/README.md). Exit 0 when at least one request succeeded, 1 when none did, 2 on a bad
// command line.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench/load/bench_options.h"
#include "bench/load/load_runner.h"
#include "bench/load/run_report.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<dpqbench::BenchOptions> options = dpqbench::ParseBenchOptions(args);
  if (!options.ok()) {
    std::cerr << "dpq-bench: " << options.status().message() << "\n";
    return 2;
  }
  if (options->help) {
    std::cout << dpqbench::Usage();
    return 0;
  }
  if (options->token.empty()) {
    if (const char* env = std::getenv("DPQ_TOKEN")) options->token = env;
  }
  absl::StatusOr<dpqbench::RunFigures> figures = dpqbench::RunLoad(*options);
  if (!figures.ok()) {
    std::cerr << "dpq-bench: " << figures.status().message() << "\n";
    return 2;
  }
  std::cout << (options->json ? dpqbench::FormatJson(*options, *figures)
                              : dpqbench::FormatTable(*options, *figures));
  return figures->ok > 0 ? 0 : 1;
}
