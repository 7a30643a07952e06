// Per-unit row ranks assigned while a dataset's COPY lines stream through dpqd: the n-th row of a
// privacy unit in load order gets rank n, stored in the hidden column `_dpq_rank`
// (store/bounding_sql.h), so contribution bounding becomes the nearly free filter
// `_dpq_rank <= K` instead of a window over the whole table at every query.
//
// Units are compared as PostgreSQL compares them, not as the bytes of the CSV: an integer unit is
// keyed by its int64 value ("007", " 7" and "+7" are one unit, as for bigint), a double unit by its
// value (-0 = 0, as float8 equality and hashing say), a text unit by its unescaped bytes. Keying
// by raw text instead would give one unit several rank-1 rows and break the K-row bound.
// All rows with a NULL unit share one counter: they form one unit (the conservative reading that
// the scanner's window path uses too).
//
// Memory grows with the number of distinct units, never with rows. Integer ids that are small and
// dense (1..N, the common case) index an array of counters: 4 bytes per id, at most 32 bytes per
// unit in it (the array only grows over ranges holding at least one unit per 8 ids), and lookups
// that stay in the CPU caches far longer (1M units: 6.7 MB). Other integer ids and double units
// go to an absl::flat_hash_map<uint64_t, int32_t>: about 34 B per unit (a 16-byte slot and a
// control byte at its load factor; 1M units: 35.7 MB), one cache miss per row once the table
// outgrows the caches. Text units: about 80 B per unit (a 40-byte slot, plus the heap bytes of
// strings over 15 bytes).
#ifndef DPQ_SERVER_STORE_ROW_RANKER_H_
#define DPQ_SERVER_STORE_ROW_RANKER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/query/dataset_schema.h"

namespace dpq::store {

class RowRanker {
 public:
  // `unit_index`: position of the privacy unit among the `num_columns` fields of each COPY line;
  // `unit_type`: its column type.
  RowRanker(size_t num_columns, size_t unit_index, query::ColumnType unit_type);

  // Continues the counter of a unit already in the table (appends): `unit_text` is the unit's value
  // as PostgreSQL prints it (`unit::text`), `is_null` for the NULL unit, `max_rank` its largest
  // stored rank. INVALID_ARGUMENT when the text does not parse as the unit's type.
  absl::Status Seed(absl::string_view unit_text, bool is_null, int32_t max_rank);

  // Appends every line of `lines` (COPY text format, each ending in '\n') to *out with one more
  // field, "\t<rank>", before its line end. INVALID_ARGUMENT when a line lacks its '\n' or has a
  // field count other than num_columns, or its unit does not parse; OUT_OF_RANGE when a unit would
  // exceed 2^31 - 1 rows. Never echoes row data.
  absl::Status RankLines(absl::string_view lines, std::string* out);

  // Rows ranked so far (seeded rows not included).
  int64_t rows() const { return rows_; }
  // Distinct units counted (seeded ones included; the NULL unit counts once when seen).
  size_t units() const;
  // Heap bytes held by the counters (the array, hash table slots and control bytes; long text keys' heap
  // bytes are not included).
  size_t MemoryBytes() const;

 private:
  static constexpr size_t kBatch = 16;  // lines whose counters are looked up together
  static constexpr uint64_t kDenseSlotsPerUnit = 8;
  static constexpr uint64_t kDenseMinSlots = 1 << 16;

  // A unit as compared by PostgreSQL (see the file comment).
  struct UnitKey {
    enum Kind { kNull, kInteger, kNumeric, kText } kind = kNull;
    uint64_t numeric = 0;    // kInteger: the int64 value; kNumeric: the bits of a double (-0 = 0)
    absl::string_view text;  // unescaped bytes (into the line, or into unescaped_[slot])
  };

  // Parses `text` (a COPY field when `escaped`, else the value as PostgreSQL prints it) into *key;
  // an unescaped copy, when needed, goes to unescaped_[slot]. False when it does not parse.
  bool ParseKey(absl::string_view text, bool escaped, size_t slot, UnitKey* key);
  void Prefetch(const UnitKey& key) const;
  int32_t* CounterFor(const UnitKey& key);
  // Grows dense_ as far as the memory rule allows, moving those ids out of numeric_.
  void ReconsiderDense();

  size_t num_columns_;
  size_t unit_index_;
  query::ColumnType unit_type_;
  std::vector<int32_t> dense_;                      // counters of integer ids 0..size-1
  size_t dense_units_ = 0;                          // non-zero entries of dense_
  size_t next_dense_check_ = 64;                    // units() at which ReconsiderDense runs next
  absl::flat_hash_map<uint64_t, int32_t> numeric_;  // other integer ids, and double units
  absl::flat_hash_map<std::string, int32_t> text_;
  int32_t null_unit_ = 0;
  int64_t rows_ = 0;
  std::string unescaped_[kBatch];
};

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_ROW_RANKER_H_
