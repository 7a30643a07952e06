// Domain records of the privacy ledger: a dataset's budget state, one allocation (audit row), the
// ledger row a debit group is admitted against, and one debit's result.
#ifndef DPQ_SERVER_STORE_ALLOCATION_H_
#define DPQ_SERVER_STORE_ALLOCATION_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/optional.h"
#include "server/dp/accounting/accountant_kind.h"
#include "server/query/privacy_units.h"

namespace dpq::store {

// Amounts are exact integer units (epsilon 1e-12, delta 1e-18; server/query/privacy_units.h);
// the double accessors are for display.
struct BudgetState {
  int64_t population_id = 0;
  std::string population;  // its name
  dp::accounting::AccountantKind accountant = dp::accounting::AccountantKind::kBasic;
  int64_t epsilon_total_units = 0;
  int64_t delta_total_units = 0;
  int64_t epsilon_spent_units = 0;
  int64_t delta_spent_units = 0;
  int64_t max_query_epsilon_units = 0;  // the largest epsilon of one query; 0: no such limit
  std::string epsilon_preset;  // domain preset of the budget (epsilon_guidance.h); empty: none
  // The budget is per time block (migration 0016): the totals are each block's, and spent is what
  // all charges composed together (informative; blocks are limited by their own cells).
  bool per_block = false;

  int64_t epsilon_remaining_units() const {
    return std::max<int64_t>(0, epsilon_total_units - epsilon_spent_units);
  }
  int64_t delta_remaining_units() const {
    return std::max<int64_t>(0, delta_total_units - delta_spent_units);
  }
  double epsilon_total() const { return query::EpsilonFromUnits(epsilon_total_units); }
  double delta_total() const { return query::DeltaFromUnits(delta_total_units); }
  double epsilon_spent() const { return query::EpsilonFromUnits(epsilon_spent_units); }
  double delta_spent() const { return query::DeltaFromUnits(delta_spent_units); }
  double epsilon_remaining() const { return query::EpsilonFromUnits(epsilon_remaining_units()); }
  double delta_remaining() const { return query::DeltaFromUnits(delta_remaining_units()); }
};

// One allocation of budget and the answer it paid for. Everything here is public to the analyst
// who asked (the released value is already noisy); nothing is raw data.
struct Allocation {
  int64_t seq = 0;  // assigned by the ledger: position in the dataset's hash chain, from 1
  std::string request_id;
  int64_t principal_id = 0;
  std::string analyst;
  std::string created_at;  // RFC 3339, assigned by the database
  std::string fingerprint;
  std::string aggregate;
  std::string column;
  std::string mechanism;
  int64_t epsilon_units = 0;  // the charge, exact (privacy_units.h)
  int64_t delta_units = 0;
  double sensitivity = 0;
  double noise_scale = 0;
  double count_noise_scale = 0;
  double value = 0;
  double confidence = 0;
  double ci_lower = 0;
  double ci_upper = 0;
  absl::optional<double> clamp_lower;
  absl::optional<double> clamp_upper;
  int max_contributions = 1;
  // The privacy events this allocation composes into the ledger, ';'-separated event specs
  // (server/dp/accounting/privacy_event.h). The nominal charge above is what basic composition and
  // per-query displays use; non-basic accountants compose these events instead.
  std::string events;
  // Version of the dataset the answer was computed on: with the fingerprint, the result-cache key.
  int64_t dataset_version = 0;
  // The datasets of the population this charge paid to read, comma-separated in the order the
  // query named them ("patients,visits"); empty on rows written before populations.
  std::string datasets;
  // The time blocks this charge paid, 'WIDTH:YYYY-MM-DD:YYYY-MM-DD' (query/time_blocks.h
  // FormatBlockRange); empty unless the population's budget is per block.
  std::string blocks;
  // The full release as canonical JSON (server/engine/release_codec.h) for multi-valued answers
  // (quantiles, histograms, group-by, batches); empty when `value` is the whole answer.
  std::string result;
  std::string prev_hash;  // 32 bytes
  std::string hash;       // 32 bytes
  // Charged before its scan (pay before you look; every allocation written since migration 0007):
  // the answer is then `release` (its row in `releases`, written after the scan), and value,
  // ci_lower, ci_upper and result above stay zero/empty. Hashed (audit_chain.cc).
  bool release_deferred = false;
  // Set by the engine when the server drew request_id just now (128 random bits): no committed
  // row can hold it, so the debit does not look for one (a round trip saved). Not stored.
  bool request_id_is_fresh = false;
  // The first day (days since 1970-01-01) of every block in `blocks`, in order: the ledger cells
  // the debit charges. Set by the engine with `blocks`. Not stored.
  std::vector<int64_t> block_starts;
  struct Release {
    double value = 0;
    double ci_lower = 0;
    double ci_upper = 0;
    std::string result;  // as `result` above
    std::string hash;    // audit_chain.h ReleaseHash (32 bytes)
  };
  absl::optional<Release> release;

  // The answer exists (inline, or in `release`). False only for a charged allocation whose scan
  // has not (yet) produced one: a retry of its request id runs the scan, never charging again.
  bool released() const { return !release_deferred || release.has_value(); }

  double epsilon() const { return query::EpsilonFromUnits(epsilon_units); }
  double delta() const { return query::DeltaFromUnits(delta_units); }
};

// A dataset's ledger row as the debit and the verification read it: the budget, the audit
// chain's head (the last row's seq and hash; 0 and the genesis hash before the first row) and the
// accountant's composed state (empty for basic ledgers and before the first charge).
struct LedgerState {
  BudgetState budget;
  int64_t head_seq = 0;
  std::string head_hash;
  std::string accountant_state;
};

struct DebitResult {
  Allocation allocation;  // as committed (seq, created_at, hashes filled in)
  BudgetState budget;     // right after the debit (in its group's arrival order)
  bool replayed = false;  // the request id was already committed: stored answer, nothing charged
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ALLOCATION_H_
