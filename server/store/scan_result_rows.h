// Reads the rows of a scan statement (scan_sql.h's result columns) into a ScanResult.
// Store-internal: <pqxx> here.
#ifndef DPQ_SERVER_STORE_SCAN_RESULT_ROWS_H_
#define DPQ_SERVER_STORE_SCAN_RESULT_ROWS_H_

#include <string>

#include <pqxx/pqxx>

#include "absl/status/status.h"
#include "server/store/scan_result.h"
#include "server/store/scan_sql.h"

namespace dpq::store {

// Replaces `*out` with the statistics in `rows`, which `statement` returned. INTERNAL for a
// bucket index outside the plan's buckets (a bug in the statement, never a data value: the bucket
// expression is clamped).
absl::Status ReadScanRows(const pqxx::result& rows, const ScanStatement& statement,
                          ScanResult* out);

// Runs `statement` in `tx` and reads its rows into `*out`. A data exception (SQLSTATE class 22)
// is caught while `tx` lives, so its owner rolls the block back and the connection stays
// poolable, and returned as its SQLSTATE in `*data_error` with an OK status (the scanner then
// runs the exact numeric statement); anything else libpqxx throws propagates.
absl::Status RunScanStatement(pqxx::transaction_base& tx, const ScanStatement& statement,
                              ScanResult* out, std::string* data_error);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_SCAN_RESULT_ROWS_H_
