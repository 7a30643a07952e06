// CSV -> COPY conversion throughput (dpqd's share of `dataset load` CPU), reported against a
// baseline run side by side: BM_LineCopyBaseline does only what any streaming converter must do
// (find each line end, append the line), so time(CsvToCopy) / time(baseline) is the price of
// validating and re-encoding the fields. Rows mirror bench/query_10m_bench.py's CSV:
// unit (integer), amount (double, two decimals), kind (text).
//
//   ./build-bench/bin/csv_to_copy_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "server/query/csv_to_copy.h"

namespace {

constexpr int kRows = 200000;
constexpr size_t kChunk = 1 << 20;  // dpqctl streams the file in 1 MiB chunks

const std::string& Csv() {
  static const std::string csv = [] {
    std::mt19937_64 rng(20261130);
    std::uniform_real_distribution<double> amount(0, 120);
    const char* kinds[] = {"visit", "call", "lab", "refill"};
    std::string out = "unit,amount,kind\n";
    char line[96];
    for (int i = 0; i < kRows; ++i) {
      const unsigned long long unit = rng() % 1000000 + 1;
      std::snprintf(line, sizeof line, "%llu,%.2f,%s\n", unit, amount(rng), kinds[unit & 3]);
      out += line;
    }
    return out;
  }();
  return csv;
}

std::vector<dpq::query::ColumnSchema> Columns() {
  using dpq::query::ColumnType;
  return {{"unit", ColumnType::kInteger, absl::nullopt, absl::nullopt, {}},
          {"amount", ColumnType::kDouble, 0.0, 100.0, {}},
          {"kind", ColumnType::kText, absl::nullopt, absl::nullopt, {}}};
}

void BM_LineCopyBaseline(benchmark::State& state) {
  const std::string& csv = Csv();
  std::string out;
  for (auto _ : state) {
    out.clear();
    for (size_t pos = 0; pos < csv.size(); pos += kChunk) {
      const char* p = csv.data() + pos;
      const char* end = csv.data() + std::min(csv.size(), pos + kChunk);
      while (p < end) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
        const char* stop = nl ? nl + 1 : end;
        out.append(p, stop - p);
        p = stop;
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * csv.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
}
BENCHMARK(BM_LineCopyBaseline)->Unit(benchmark::kMillisecond);

void BM_CsvToCopy(benchmark::State& state) {
  const std::string& csv = Csv();
  std::string out;
  for (auto _ : state) {
    out.clear();
    dpq::query::CsvToCopy converter(Columns());
    for (size_t pos = 0; pos < csv.size(); pos += kChunk) {
      if (!converter.Feed(absl::string_view(csv).substr(pos, kChunk), &out).ok()) {
        state.SkipWithError("conversion failed");
        return;
      }
    }
    if (!converter.Finish(&out).ok() || converter.rows() != kRows) {
      state.SkipWithError("conversion failed");
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * csv.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kRows);
}
BENCHMARK(BM_CsvToCopy)->Unit(benchmark::kMillisecond);

}  // namespace
