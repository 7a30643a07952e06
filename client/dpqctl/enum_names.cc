#include "client/dpqctl/enum_names.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"

namespace dpqctl {
namespace internal {
namespace {

// The descriptor is the single source of the names, so a value added to the proto gets its word
// without a change here.
std::string WordOf(const google::protobuf::EnumDescriptor* descriptor, absl::string_view prefix,
                   int value) {
  const google::protobuf::EnumValueDescriptor* found = descriptor->FindValueByNumber(value);
  if (found == nullptr) return absl::StrCat(value);
  absl::string_view name = found->name();
  if (absl::StartsWith(name, prefix)) name.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(name);
}

absl::StatusOr<int> ValueOf(const google::protobuf::EnumDescriptor* descriptor,
                            absl::string_view prefix, absl::string_view word,
                            absl::string_view flag) {
  const std::string name = absl::StrCat(prefix, absl::AsciiStrToUpper(word));
  const google::protobuf::EnumValueDescriptor* found =
      word == "unspecified" || absl::AsciiStrToLower(word) != word
          ? nullptr
          : descriptor->FindValueByName(name);
  if (found != nullptr && found->number() != 0) return found->number();
  std::vector<std::string> words;
  for (int i = 0; i < descriptor->value_count(); ++i) {
    if (descriptor->value(i)->number() == 0) continue;
    words.push_back(WordOf(descriptor, prefix, descriptor->value(i)->number()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": '", word, "' is not one of ", absl::StrJoin(words, ", ")));
}

}  // namespace
}  // namespace internal

std::string ColumnTypeWord(dpq::v1::ColumnType value) {
  return internal::WordOf(dpq::v1::ColumnType_descriptor(), "COLUMN_TYPE_", value);
}
std::string AggregateWord(dpq::v1::Aggregate value) {
  return internal::WordOf(dpq::v1::Aggregate_descriptor(), "AGGREGATE_", value);
}
std::string MechanismWord(dpq::v1::Mechanism value) {
  return internal::WordOf(dpq::v1::Mechanism_descriptor(), "MECHANISM_", value);
}
std::string RoleWord(dpq::v1::Role value) {
  return internal::WordOf(dpq::v1::Role_descriptor(), "ROLE_", value);
}

absl::StatusOr<dpq::v1::ColumnType> ParseColumnTypeWord(absl::string_view word,
                                                        absl::string_view flag) {
  absl::StatusOr<int> value =
      internal::ValueOf(dpq::v1::ColumnType_descriptor(), "COLUMN_TYPE_", word, flag);
  if (!value.ok()) return value.status();
  return static_cast<dpq::v1::ColumnType>(*value);
}
absl::StatusOr<dpq::v1::Aggregate> ParseAggregateWord(absl::string_view word,
                                                      absl::string_view flag) {
  absl::StatusOr<int> value =
      internal::ValueOf(dpq::v1::Aggregate_descriptor(), "AGGREGATE_", word, flag);
  if (!value.ok()) return value.status();
  return static_cast<dpq::v1::Aggregate>(*value);
}
absl::StatusOr<dpq::v1::Mechanism> ParseMechanismWord(absl::string_view word,
                                                      absl::string_view flag) {
  // MECHANISM_EXPONENTIAL only names quantile answers; the server refuses it in a request.
  if (word == "exponential") {
    return absl::InvalidArgumentError(absl::StrCat(
        flag,
        ": 'exponential' is not one of laplace, gaussian (the server uses it for quantiles "
        "by itself)"));
  }
  absl::StatusOr<int> value =
      internal::ValueOf(dpq::v1::Mechanism_descriptor(), "MECHANISM_", word, flag);
  if (!value.ok()) return value.status();
  return static_cast<dpq::v1::Mechanism>(*value);
}
absl::StatusOr<dpq::v1::Role> ParseRoleWord(absl::string_view word, absl::string_view flag) {
  absl::StatusOr<int> value = internal::ValueOf(dpq::v1::Role_descriptor(), "ROLE_", word, flag);
  if (!value.ok()) return value.status();
  return static_cast<dpq::v1::Role>(*value);
}

}  // namespace dpqctl
