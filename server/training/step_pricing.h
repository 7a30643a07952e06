// What a training run's step report charges, per ledger accountant (decisions.md "Training runs").
// A report of K steps is a declared workload: K Poisson-subsampled Gaussian steps with the run's
// (q, z), fixed before the ledger admits it, so its charge is a function of (q, z, delta, K) and the
// ledger's accountant only; nothing of the data.
//  * rdp, zcdp ledgers: the K steps themselves go into the ledger's filter state (RDP of the
//    subsampled Gaussian: Mironov, Talwar & Zhang 2019; curves add across reports and queries, and
//    the stopping rule is a valid filter under adaptive reports: Feldman & Zrnic 2021). zCDP has no
//    subsampling amplification, so a zcdp ledger charges each step as the full Gaussian (z).
//  * pld, basic, advanced ledgers: the report is priced as ONE (epsilon, delta) event at the run's
//    delta, epsilon = min(RDP, PLD) of the K steps (PLD: Koskela et al. 2020, Doroshenko et al.
//    2022 connect-the-dots; valid because the K steps are fixed in advance, as for query batches),
//    and that event is what the ledger composes (its delta is spent per report).
#ifndef DPQ_SERVER_TRAINING_STEP_PRICING_H_
#define DPQ_SERVER_TRAINING_STEP_PRICING_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/training/run_spec.h"

namespace dpq::training {

struct StepCharge {
  // Nominal charge (audit row, per-analyst caps, basic ledgers): the epsilon of these K steps alone
  // at the run's delta, rounded UP to the ledger's 1e-12 units, and the run's delta in 1e-18 units.
  int64_t epsilon_units = 0;
  int64_t delta_units = 0;
  // What the ledger's accountant composes (privacy_event.h specs): the K steps on rdp/zcdp ledgers,
  // one approx:epsilon=...,delta=... event otherwise.
  std::string events;
  // How the nominal epsilon was found: "rdp", "zcdp" or "pld" (the smaller of RDP and PLD).
  std::string method;
};

// True when `ledger_accountant` composes the steps themselves (rdp, zcdp), false when each report
// is one (epsilon, delta) event (pld, basic, advanced).
bool LedgerComposesSteps(dp::accounting::AccountantKind ledger_accountant);

// The charge of a report of `steps` steps of `run` on a ledger kept by `ledger_accountant`.
// INVALID_ARGUMENT for a bad run or steps (naming it); OUT_OF_RANGE when the epsilon of
// the report exceeds the largest budget (no ledger could admit it).
absl::StatusOr<StepCharge> PriceStepReport(dp::accounting::AccountantKind ledger_accountant,
                                           const RunSpec& run, int64_t steps);

// The epsilon at run.delta of `steps` steps of `run` composed by the ledger's rule for one run:
// rdp/zcdp ledgers, that accountant's epsilon of all the steps (what their ledger composes);
// otherwise min(RDP, PLD) of all the steps as one declared run (the tightest figure for a run of
// exactly that length; the ledger itself was charged per report). 0 for steps == 0.
absl::StatusOr<double> RunEpsilon(dp::accounting::AccountantKind ledger_accountant,
                                  const RunSpec& run, int64_t steps);

// Whether a report with this charge would be admitted now (the caller's ledger and cap rule); must
// be monotone: if a charge fits, every charge with smaller epsilon (same delta) fits.
using ChargeFits = std::function<absl::StatusOr<bool>(const StepCharge&)>;

// The most steps (up to kMaxStepsPerReport) one report could charge with `fits` holding. Exact on
// rdp/zcdp ledgers (each probe is an RDP price, microseconds). On pld/basic/advanced ledgers each
// exact probe is a PLD price (0.02 s to 2 s), so: bisect first with the RDP-only charge (never
// below the real one, so what fits by it fits), then search above that with real charges to 1 %:
// the result fits and is at least 0.99 times the exact figure.
absl::StatusOr<int64_t> StepsLeft(dp::accounting::AccountantKind ledger_accountant,
                                  const RunSpec& run, const ChargeFits& fits);

namespace internal {
// The largest k in [lo, max_steps] with fits(k), given fits(lo) (lo >= 0; fits(0) is taken as
// true) and fits monotone (true up to some k, false after): doubling from lo, then bisection until
// hi - lo <= rel_precision * lo (0: exact). Errors of `fits` propagate.
absl::StatusOr<int64_t> LargestFittingSteps(
    int64_t lo, int64_t max_steps, double rel_precision,
    const std::function<absl::StatusOr<bool>(int64_t)>& fits);
// The charge of `steps` priced by RDP alone (>= PriceStepReport's on pld/basic/advanced ledgers).
absl::StatusOr<StepCharge> RdpOnlyCharge(const RunSpec& run, int64_t steps);
}  // namespace internal

}  // namespace dpq::training

#endif  // DPQ_SERVER_TRAINING_STEP_PRICING_H_
