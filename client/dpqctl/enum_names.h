// The words dpqctl uses for the dpq.v1 enums, on the command line and in JSON: the value name
// without its prefix, in lower case ("laplace", "count", "integer", "admin"). The zero value reads
// "unspecified"; a value this build does not know (a newer server) reads as its number.
#ifndef DPQ_CLIENT_DPQCTL_ENUM_NAMES_H_
#define DPQ_CLIENT_DPQCTL_ENUM_NAMES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dpq/v1/dpq.pb.h"

namespace dpqctl {

std::string ColumnTypeWord(dpq::v1::ColumnType value);
std::string AggregateWord(dpq::v1::Aggregate value);
std::string MechanismWord(dpq::v1::Mechanism value);
std::string RoleWord(dpq::v1::Role value);

// The inverse, for command-line words. INVALID_ARGUMENT naming `flag` for an unknown word or
// "unspecified" (callers omit the field instead).
absl::StatusOr<dpq::v1::ColumnType> ParseColumnTypeWord(absl::string_view word,
                                                        absl::string_view flag);
absl::StatusOr<dpq::v1::Aggregate> ParseAggregateWord(absl::string_view word,
                                                      absl::string_view flag);
absl::StatusOr<dpq::v1::Mechanism> ParseMechanismWord(absl::string_view word,
                                                      absl::string_view flag);
absl::StatusOr<dpq::v1::Role> ParseRoleWord(absl::string_view word, absl::string_view flag);

}  // namespace dpqctl

#endif  // DPQ_CLIENT_DPQCTL_ENUM_NAMES_H_
