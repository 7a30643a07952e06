// Time to price a workload on each accountant, without any ledger or I/O: the benchmark scenario p7
// (bench/README.md) asks that a PLD batch price of 100 events be interactive (< 50 ms). The RDP and
// zCDP prices of the same events run beside it as the baseline (closed forms per event, no
// discretisation).
//
// Workloads: 100 distinct Laplace events (scales 10..109, what bench/run_bench.py's p7 prices
// through dpqctl), 100 identical ones, and 100 distinct Poisson-subsampled Gaussian steps.
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "server/dp/accounting/accountant.h"
#include "server/dp/accounting/privacy_event.h"

namespace {

using dpq::dp::accounting::PriceEvents;
using dpq::dp::accounting::PrivacyEvent;

std::vector<PrivacyEvent> Workload(int kind) {
  std::vector<PrivacyEvent> events;
  for (int i = 0; i < 100; ++i) {
    if (kind == 0) events.push_back(PrivacyEvent::Laplace(10 + i));
    if (kind == 1) events.push_back(PrivacyEvent::Laplace(10));
    if (kind == 2) events.push_back(PrivacyEvent::PoissonSubsampledGaussian(0.01, 1.0 + i / 100.0));
  }
  return events;
}

void Price(benchmark::State& state, const char* accountant) {
  const std::vector<PrivacyEvent> events = Workload(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto price = PriceEvents(accountant, 1e-6, events);
    if (!price.ok()) state.SkipWithError(std::string(price.status().message()).c_str());
    benchmark::DoNotOptimize(price);
  }
}

void BM_PricePld(benchmark::State& state) { Price(state, "pld"); }
void BM_PriceRdp(benchmark::State& state) { Price(state, "rdp"); }
void BM_PriceZcdp(benchmark::State& state) { Price(state, "zcdp"); }

// Arg: 0 = 100 distinct Laplace, 1 = 100 identical Laplace, 2 = 100 distinct subsampled Gaussian.
BENCHMARK(BM_PricePld)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PriceRdp)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PriceZcdp)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
