#include "server/engine/release_codec.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "server/query/planner.h"

namespace dpq::engine {

namespace {

nlohmann::json RowsJson(const std::vector<ReleasedRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const ReleasedRow& r : rows) {
    nlohmann::json j;
    // A NULL group value (query::NullGroupKey) is JSON null; releases stored before NULL groups
    // existed hold strings only and decode as before.
    nlohmann::json key = nlohmann::json::array();
    for (const std::string& k : r.key)
      key.push_back(query::IsNullGroupKey(k) ? nlohmann::json() : nlohmann::json(k));
    j["key"] = std::move(key);
    j["label"] = r.label;
    j["value"] = r.value;
    j["ci"] = r.has_interval ? nlohmann::json::array({r.ci_lower, r.ci_upper}) : nlohmann::json();
    j["noise_scale"] = r.noise_scale;
    j["rank_error"] = r.rank_error;
    list.push_back(std::move(j));
  }
  return list;
}

// Throws nlohmann::json::exception on a malformed document.
std::vector<ReleasedRow> RowsFromJson(const nlohmann::json& list) {
  std::vector<ReleasedRow> rows;
  for (const nlohmann::json& j : list) {
    ReleasedRow r;
    for (const nlohmann::json& k : j.at("key")) {
      r.key.push_back(k.is_null() ? query::NullGroupKey() : k.get<std::string>());
    }
    r.label = j.at("label").get<std::string>();
    r.value = j.at("value").get<double>();
    r.has_interval = !j.at("ci").is_null();
    if (r.has_interval) {
      r.ci_lower = j.at("ci").at(0).get<double>();
      r.ci_upper = j.at("ci").at(1).get<double>();
    }
    r.noise_scale = j.at("noise_scale").get<double>();
    r.rank_error = j.at("rank_error").get<double>();
    rows.push_back(std::move(r));
  }
  return rows;
}

nlohmann::json Optional(const absl::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
absl::optional<double> OptionalFrom(const nlohmann::json& j) {
  return j.is_null() ? absl::nullopt : absl::make_optional(j.get<double>());
}

}  // namespace

std::string EncodeRows(const std::vector<ReleasedRow>& rows) {
  nlohmann::json out = nlohmann::json::object();
  out["rows"] = RowsJson(rows);
  return out.dump();
}

absl::StatusOr<std::vector<ReleasedRow>> DecodeRows(const std::string& json) {
  try {
    return RowsFromJson(nlohmann::json::parse(json).at("rows"));
  } catch (const nlohmann::json::exception& e) {
    return absl::InternalError(absl::StrCat("stored result does not decode: ", e.what()));
  }
}

std::string EncodeBatch(const std::vector<BatchAnswer>& answers) {
  nlohmann::json list = nlohmann::json::array();
  for (const BatchAnswer& a : answers) {
    nlohmann::json j;
    j["aggregate"] = a.aggregate;
    j["column"] = a.column;
    j["mechanism"] = a.mechanism;
    j["epsilon_units"] = a.epsilon_units;
    j["delta_units"] = a.delta_units;
    j["noise_scale"] = a.noise_scale;
    j["count_noise_scale"] = a.count_noise_scale;
    j["sensitivity"] = a.sensitivity;
    j["confidence"] = a.confidence;
    j["lower"] = Optional(a.lower);
    j["upper"] = Optional(a.upper);
    j["max_contributions"] = a.max_contributions;
    j["max_partitions"] = a.max_partitions;
    j["rows"] = RowsJson(a.rows);
    list.push_back(std::move(j));
  }
  nlohmann::json out = nlohmann::json::object();
  out["batch"] = std::move(list);
  return out.dump();
}

absl::StatusOr<std::vector<BatchAnswer>> DecodeBatch(const std::string& json) {
  std::vector<BatchAnswer> out;
  try {
    const nlohmann::json doc = nlohmann::json::parse(json);  // outlives the loop below
    for (const nlohmann::json& j : doc.at("batch")) {
      BatchAnswer a;
      a.aggregate = j.at("aggregate").get<std::string>();
      a.column = j.at("column").get<std::string>();
      a.mechanism = j.at("mechanism").get<std::string>();
      a.epsilon_units = j.at("epsilon_units").get<int64_t>();
      a.delta_units = j.at("delta_units").get<int64_t>();
      a.noise_scale = j.at("noise_scale").get<double>();
      a.count_noise_scale = j.at("count_noise_scale").get<double>();
      a.sensitivity = j.at("sensitivity").get<double>();
      a.confidence = j.at("confidence").get<double>();
      a.lower = OptionalFrom(j.at("lower"));
      a.upper = OptionalFrom(j.at("upper"));
      a.max_contributions = j.at("max_contributions").get<int>();
      a.max_partitions = j.at("max_partitions").get<int>();
      a.rows = RowsFromJson(j.at("rows"));
      out.push_back(std::move(a));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InternalError(absl::StrCat("stored batch result does not decode: ", e.what()));
  }
  return out;
}

absl::StatusOr<std::vector<ReleasedRow>> RowsOf(const store::Allocation& a) {
  if (a.release.has_value()) return DecodeRows(a.release->result);
  if (a.release_deferred) return absl::InternalError("the allocation has no release yet");
  if (!a.result.empty()) return DecodeRows(a.result);
  ReleasedRow r;
  r.value = a.value;
  r.ci_lower = a.ci_lower;
  r.ci_upper = a.ci_upper;
  r.noise_scale = a.noise_scale;
  return std::vector<ReleasedRow>{r};
}

}  // namespace dpq::engine
