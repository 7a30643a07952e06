// Samples per second of the exact samplers (driven by the production CSPRNG) next to textbook
// floating-point draws from std::mt19937_64, at scales 1, 1e3, 1e6. The floating-point draws are
// here only as a speed baseline: they are NOT private (Mironov 2012).
#include <cmath>
#include <random>

#include "benchmark/benchmark.h"
#include "server/dp/discrete_gaussian.h"
#include "server/dp/discrete_laplace.h"
#include "server/dp/secure_random.h"

namespace {

void BM_DiscreteLaplace(benchmark::State& state) {
  auto sampler = dpq::dp::DiscreteLaplaceSampler::Create(static_cast<double>(state.range(0)));
  dpq::dp::RandomSource& rng = dpq::dp::SecureRandom();
  for (auto _ : state) benchmark::DoNotOptimize(sampler->Sample(rng));
  state.SetItemsProcessed(state.iterations());
}

void BM_DiscreteGaussian(benchmark::State& state) {
  auto sampler = dpq::dp::DiscreteGaussianSampler::Create(static_cast<double>(state.range(0)));
  dpq::dp::RandomSource& rng = dpq::dp::SecureRandom();
  for (auto _ : state) benchmark::DoNotOptimize(sampler->Sample(rng));
  state.SetItemsProcessed(state.iterations());
}

void BM_FloatLaplaceMt(benchmark::State& state) {
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> uniform(-0.5, 0.5);
  const double b = static_cast<double>(state.range(0));
  for (auto _ : state) {
    const double u = uniform(gen);
    benchmark::DoNotOptimize(-b * std::copysign(1.0, u) * std::log(1 - 2 * std::fabs(u)));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_FloatNormalMt(benchmark::State& state) {
  std::mt19937_64 gen(42);
  std::normal_distribution<double> normal(0, static_cast<double>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(normal(gen));
  state.SetItemsProcessed(state.iterations());
}

void BM_SecureRandomWord(benchmark::State& state) {
  dpq::dp::RandomSource& rng = dpq::dp::SecureRandom();
  for (auto _ : state) benchmark::DoNotOptimize(rng.NextUint64());
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_DiscreteLaplace)->Arg(1)->Arg(1000)->Arg(1000000);
BENCHMARK(BM_FloatLaplaceMt)->Arg(1)->Arg(1000)->Arg(1000000);
BENCHMARK(BM_DiscreteGaussian)->Arg(1)->Arg(1000)->Arg(1000000);
BENCHMARK(BM_FloatNormalMt)->Arg(1)->Arg(1000)->Arg(1000000);
BENCHMARK(BM_SecureRandomWord);

}  // namespace
