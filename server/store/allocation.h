// Domain records of the privacy ledger: a dataset's budget state and one allocation (audit row).
#ifndef DPQ_SERVER_STORE_ALLOCATION_H_
#define DPQ_SERVER_STORE_ALLOCATION_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/types/optional.h"

namespace dpq::store {

struct BudgetState {
  int64_t dataset_id = 0;
  std::string dataset;
  std::string accountant = "basic";
  double epsilon_total = 0;
  double delta_total = 0;
  double epsilon_spent = 0;
  double delta_spent = 0;

  double epsilon_remaining() const { return std::max(0.0, epsilon_total - epsilon_spent); }
  double delta_remaining() const { return std::max(0.0, delta_total - delta_spent); }
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
  double epsilon = 0;
  double delta = 0;
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
  std::string prev_hash;  // 32 bytes
  std::string hash;       // 32 bytes
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ALLOCATION_H_
