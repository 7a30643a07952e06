// Conversions of the DP SQL results (engine/sql_execution.h) to the dpq.v1 wire types.
#ifndef DPQ_SERVER_API_SQL_CONVERT_H_
#define DPQ_SERVER_API_SQL_CONVERT_H_

#include "dpq/v1/dpq.pb.h"
#include "server/engine/sql_execution.h"

namespace dpq::api {

void ToProto(const engine::SqlOutcome& outcome, v1::SqlResponse* out);
void ToProto(const engine::SqlExplanation& explanation, v1::ExplainSqlResponse* out);

}  // namespace dpq::api

#endif  // DPQ_SERVER_API_SQL_CONVERT_H_
