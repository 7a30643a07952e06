#include "client/dpqctl/query_request.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/dpqctl/csv_schema.h"
#include "client/dpqctl/enum_names.h"

namespace dpqctl {
namespace internal {
namespace {

// Splits every part at commas. INVALID_ARGUMENT naming `flag` for no element at all or an empty
// one: "1,,2" and a trailing comma are typing mistakes, not a request for an empty value.
absl::StatusOr<std::vector<std::string>> SplitList(const std::vector<std::string>& parts,
                                                   absl::string_view flag) {
  std::vector<std::string> items;
  for (const std::string& part : parts) {
    for (absl::string_view item : absl::StrSplit(part, ',')) {
      if (item.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, ": '", part, "' has an empty element (expected a comma-separated list)"));
      }
      items.emplace_back(item);
    }
  }
  if (items.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": the list is empty"));
  }
  return items;
}

// Where in a batch file a value sits, for messages: "queries[3].epsilon".
std::string Where(size_t index, absl::string_view key) {
  return absl::StrCat("queries[", index, "].", key);
}

absl::Status WrongType(size_t index, absl::string_view key, absl::string_view expected,
                       const nlohmann::json& value) {
  return absl::InvalidArgumentError(
      absl::StrCat(Where(index, key), ": expected ", expected, ", got ", value.type_name()));
}

absl::StatusOr<double> JsonNumber(const nlohmann::json& value, size_t index,
                                  absl::string_view key) {
  if (!value.is_number()) return WrongType(index, key, "a number", value);
  const double number = value.get<double>();
  // JSON has no NaN or infinity, but an overflowing literal (1e999) parses as infinity.
  if (!std::isfinite(number)) {
    return absl::InvalidArgumentError(absl::StrCat(Where(index, key), ": not a finite number"));
  }
  return number;
}

absl::StatusOr<std::string> JsonString(const nlohmann::json& value, size_t index,
                                       absl::string_view key) {
  if (!value.is_string()) return WrongType(index, key, "a string", value);
  return value.get<std::string>();
}

absl::StatusOr<int32_t> JsonCount(const nlohmann::json& value, size_t index,
                                  absl::string_view key) {
  // 3.0 is refused along with 3.5: the flags take integers only, and so does the file.
  if (!value.is_number_integer()) return WrongType(index, key, "a non-negative integer", value);
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(index, key), ": ", value.dump(), " is too large"));
    }
    return static_cast<int32_t>(value.get<uint64_t>());
  }
  const int64_t number = value.get<int64_t>();
  if (number < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(index, key), ": expected a non-negative integer, got ", number));
  }
  if (number > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(index, key), ": ", number, " is too large"));
  }
  return static_cast<int32_t>(number);
}

absl::StatusOr<std::vector<double>> JsonNumbers(const nlohmann::json& value, size_t index,
                                                absl::string_view key) {
  if (!value.is_array()) return WrongType(index, key, "an array of numbers", value);
  std::vector<double> numbers;
  for (size_t i = 0; i < value.size(); ++i) {
    absl::StatusOr<double> number = JsonNumber(value[i], index, absl::StrCat(key, "[", i, "]"));
    if (!number.ok()) return number.status();
    numbers.push_back(*number);
  }
  return numbers;
}

absl::StatusOr<std::vector<std::string>> JsonStrings(const nlohmann::json& value, size_t index,
                                                     absl::string_view key) {
  if (!value.is_array()) return WrongType(index, key, "an array of strings", value);
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    absl::StatusOr<std::string> text = JsonString(value[i], index, absl::StrCat(key, "[", i, "]"));
    if (!text.ok()) return text.status();
    strings.push_back(*std::move(text));
  }
  return strings;
}

// One setter per accepted key: converts the value and stores it, or names what is wrong.
using KeySetter =
    std::function<absl::Status(const nlohmann::json&, size_t, absl::string_view, QueryArgs*)>;

template <typename T, typename Convert>
KeySetter Setter(Convert convert, T QueryArgs::*field) {
  return [convert, field](const nlohmann::json& value, size_t index, absl::string_view key,
                          QueryArgs* args) -> absl::Status {
    auto converted = convert(value, index, key);
    if (!converted.ok()) return converted.status();
    args->*field = *std::move(converted);
    return absl::OkStatus();
  };
}

const std::map<std::string, KeySetter>& BatchKeys() {
  static const auto* keys = new std::map<std::string, KeySetter>{
      {"aggregate", Setter(JsonString, &QueryArgs::aggregate)},
      {"column", Setter(JsonString, &QueryArgs::column)},
      {"lower", Setter(JsonNumber, &QueryArgs::lower)},
      {"upper", Setter(JsonNumber, &QueryArgs::upper)},
      {"epsilon", Setter(JsonNumber, &QueryArgs::epsilon)},
      {"mechanism", Setter(JsonString, &QueryArgs::mechanism)},
      {"delta", Setter(JsonNumber, &QueryArgs::delta)},
      {"max_contributions", Setter(JsonCount, &QueryArgs::max_contributions)},
      {"where", Setter(JsonString, &QueryArgs::where)},
      {"confidence", Setter(JsonNumber, &QueryArgs::confidence)},
      {"quantiles", Setter(JsonNumbers, &QueryArgs::quantiles)},
      {"bins", Setter(JsonNumbers, &QueryArgs::bins)},
      {"group_by", Setter(JsonStrings, &QueryArgs::group_by)},
      {"keys", Setter(JsonStrings, &QueryArgs::keys)},
      {"max_partitions", Setter(JsonCount, &QueryArgs::max_partitions)},
  };
  return *keys;
}

}  // namespace
}  // namespace internal

absl::StatusOr<std::vector<double>> ParseNumberList(const std::vector<std::string>& parts,
                                                    absl::string_view flag) {
  absl::StatusOr<std::vector<std::string>> items = internal::SplitList(parts, flag);
  if (!items.ok()) return items.status();
  std::vector<double> numbers;
  for (const std::string& item : *items) {
    // "0.1, 0.5" (quoted on the shell) reads as meant; no number contains a space.
    const absl::string_view text = absl::StripAsciiWhitespace(item);
    if (!ParsesAsFiniteDouble(text)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", item, "' is not a finite number"));
    }
    double value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
    numbers.push_back(value);
  }
  return numbers;
}

absl::StatusOr<std::vector<std::string>> ParseNameList(const std::vector<std::string>& parts,
                                                       absl::string_view flag) {
  return internal::SplitList(parts, flag);
}

absl::StatusOr<dpq::v1::QueryRequest> BuildQueryRequest(const QueryArgs& args,
                                                        absl::string_view flag_prefix) {
  absl::StatusOr<dpq::v1::Aggregate> aggregate =
      ParseAggregateWord(args.aggregate, absl::StrCat(flag_prefix, "aggregate"));
  if (!aggregate.ok()) return aggregate.status();
  dpq::v1::QueryRequest request;
  if (!args.mechanism.empty()) {
    absl::StatusOr<dpq::v1::Mechanism> mechanism =
        ParseMechanismWord(args.mechanism, absl::StrCat(flag_prefix, "mechanism"));
    if (!mechanism.ok()) return mechanism.status();
    request.set_mechanism(*mechanism);
  }
  request.set_dataset(args.dataset);
  request.set_aggregate(*aggregate);
  request.set_column(args.column);
  if (args.lower.has_value()) request.set_lower(*args.lower);
  if (args.upper.has_value()) request.set_upper(*args.upper);
  request.set_epsilon(args.epsilon);
  request.set_delta(args.delta);
  request.set_max_contributions(args.max_contributions);
  request.set_request_id(args.request_id);
  request.set_confidence(args.confidence);
  request.set_where(args.where);
  for (double q : args.quantiles) request.add_quantiles(q);
  for (double edge : args.bins) request.add_bins(edge);
  for (const std::string& column : args.group_by) request.add_group_by(column);
  for (const std::string& key : args.keys) request.add_keys(key);
  request.set_max_partitions(args.max_partitions);
  request.set_per_unit(args.per_unit);
  return request;
}

absl::StatusOr<std::vector<QueryArgs>> ParseQueryBatchJson(const nlohmann::json& document,
                                                           absl::string_view dataset) {
  if (!document.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a JSON array of query objects, got ", document.type_name()));
  }
  if (document.empty()) {
    return absl::InvalidArgumentError("the array is empty: give at least one query");
  }
  if (document.size() > kMaxBatchQueries) {
    return absl::InvalidArgumentError(absl::StrCat("the array holds ", document.size(),
                                                   " queries; at most ", kMaxBatchQueries,
                                                   " fit in one batch"));
  }
  const std::map<std::string, internal::KeySetter>& setters = internal::BatchKeys();
  std::vector<QueryArgs> queries;
  queries.reserve(document.size());
  for (size_t i = 0; i < document.size(); ++i) {
    const nlohmann::json& entry = document[i];
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("queries[", i, "]: expected an object, got ", entry.type_name()));
    }
    QueryArgs args;
    args.dataset = std::string(dataset);
    for (const auto& [key, value] : entry.items()) {
      auto setter = setters.find(key);
      if (setter == setters.end()) {
        std::vector<std::string> known;
        for (const auto& [name, unused] : setters) known.push_back(name);
        return absl::InvalidArgumentError(
            absl::StrCat(internal::Where(i, key),
                         ": unknown key (known keys: ", absl::StrJoin(known, ", "), ")"));
      }
      absl::Status set = setter->second(value, i, key, &args);
      if (!set.ok()) return set;
    }
    for (const char* required : {"aggregate", "epsilon"}) {
      if (!entry.contains(required)) {
        return absl::InvalidArgumentError(
            absl::StrCat("queries[", i, "]: key '", required, "' is required"));
      }
    }
    queries.push_back(std::move(args));
  }
  return queries;
}

}  // namespace dpqctl
