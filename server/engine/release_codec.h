// The released rows of an answer as canonical JSON, stored in the audit row (`result`) so a replay
// or a cache hit returns exactly what was released, and covered by the audit hash chain:
//   {"rows":[{"key":[...],"label":"...","value":v,"ci":[lo,hi]|null,"noise_scale":s,
//             "rank_error":r}, ...]}
// Numbers print with round-trip precision, so Decode(Encode(rows)) == rows.
#ifndef DPQ_SERVER_ENGINE_RELEASE_CODEC_H_
#define DPQ_SERVER_ENGINE_RELEASE_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/optional.h"

#include "absl/status/statusor.h"
#include "server/engine/noisy_release.h"
#include "server/store/allocation.h"

namespace dpq::engine {

std::string EncodeRows(const std::vector<ReleasedRow>& rows);

// One answer of a query batch, as stored in the batch's audit row.
struct BatchAnswer {
  std::string aggregate;
  std::string column;
  std::string mechanism;
  int64_t epsilon_units = 0;  // the query's own (nominal) charge
  int64_t delta_units = 0;
  double noise_scale = 0;
  double count_noise_scale = 0;
  double sensitivity = 0;
  double confidence = 0;
  absl::optional<double> lower, upper;
  int max_contributions = 1;
  int max_partitions = 1;
  std::vector<ReleasedRow> rows;
};

//   {"batch":[{"aggregate":..., ..., "rows":[...]}, ...]}
std::string EncodeBatch(const std::vector<BatchAnswer>& answers);
absl::StatusOr<std::vector<BatchAnswer>> DecodeBatch(const std::string& json);

// INTERNAL for text that is not an encoding produced by EncodeRows.
absl::StatusOr<std::vector<ReleasedRow>> DecodeRows(const std::string& json);

// The rows of a committed, answered allocation: decoded from its release (allocations charged
// before their scan, migration 0007) or `result`, or, for allocations written before results were
// stored, the single value and interval of the row.
absl::StatusOr<std::vector<ReleasedRow>> RowsOf(const store::Allocation& a);

}  // namespace dpq::engine

#endif  // DPQ_SERVER_ENGINE_RELEASE_CODEC_H_
