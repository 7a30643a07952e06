#include "server/store/population_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/query/calendar.h"
#include "server/store/admin_log.h"

namespace dpq::store {
namespace {

using query::ColumnType;

absl::Status PopulationNotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("population ", name.substr(0, 64),
                                          " not found (`dpqctl population list` lists them)"));
}

// Columns read by PopulationFromRow, from "populations p".
constexpr char kPopulationColumns[] =
    "p.id, p.name, p.unit_type, "
    "to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), "
    "p.dropped_at IS NOT NULL, (SELECT coalesce(array_agg(d.name ORDER BY d.name), '{}') "
    "FROM datasets d WHERE d.population_id = p.id AND d.dropped_at IS NULL)";

Population PopulationFromRow(const pqxx::row& r) {
  Population p;
  p.id = r[0].as<int64_t>();
  p.name = r[1].as<std::string>();
  p.unit_type = query::ParseColumnType(r[2].as<std::string>()).value_or(ColumnType::kText);
  p.created_at = r[3].as<std::string>();
  p.dropped = r[4].as<bool>();
  auto array = r[5].as_array();
  for (auto [kind, value] = array.get_next(); kind != pqxx::array_parser::done;
       std::tie(kind, value) = array.get_next()) {
    if (kind == pqxx::array_parser::string_value) p.datasets.push_back(value);
  }
  return p;
}

const query::ColumnSchema* UnitColumn(const query::DatasetSchema& schema) {
  return schema.FindColumn(schema.privacy_unit);
}

}  // namespace

absl::StatusOr<Population> PopulationStore::Create(const std::string& name, ColumnType unit_type,
                                                   const AdminAction* log) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "population"));
  Population created;
  absl::Status status = db_->RunOnce("create population", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    const pqxx::row r =
        tx.exec_params1("INSERT INTO populations (name, unit_type) VALUES ($1, $2) RETURNING id",
                        name, std::string(query::ColumnTypeName(unit_type)));
    tx.exec_params0("INSERT INTO ledgers (population_id) VALUES ($1)", r[0].as<int64_t>());
    if (log != nullptr) AppendAdminAction(tx, *log);
    created = PopulationFromRow(tx.exec_params1(
        absl::StrCat("SELECT ", kPopulationColumns, " FROM populations p WHERE p.id = $1"),
        r[0].as<int64_t>()));
    tx.commit();
    return absl::OkStatus();
  });
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(
        absl::StrCat("population ", name, " already exists (`dpqctl population list` lists them)"));
  }
  RETURN_IF_ERROR(status);
  return created;
}

namespace {

// The population of that name, live or dropped.
absl::optional<Population> PopulationNamed(pqxx::transaction_base& tx, const std::string& name) {
  const pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", kPopulationColumns, " FROM populations p WHERE p.name = $1"), name);
  if (r.empty()) return absl::nullopt;
  return PopulationFromRow(r[0]);
}

}  // namespace

absl::StatusOr<std::vector<Population>> PopulationStore::List() {
  std::vector<Population> out;
  RETURN_IF_ERROR(db_->Run("list populations", [&](pqxx::connection& c) {
    out.clear();
    pqxx::read_transaction tx(c);
    for (const pqxx::row& r :
         tx.exec(absl::StrCat("SELECT ", kPopulationColumns,
                              " FROM populations p ORDER BY p.dropped_at IS NOT NULL, p.name"))) {
      out.push_back(PopulationFromRow(r));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Population> PopulationStore::Get(const std::string& name) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "population"));
  absl::optional<Population> found;
  RETURN_IF_ERROR(db_->Run("get population", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    found = PopulationNamed(tx, name);
    return absl::OkStatus();
  }));
  if (!found.has_value()) return PopulationNotFound(name);
  return *std::move(found);
}

absl::StatusOr<ResolvedPopulation> PopulationStore::Resolve(const std::string& name) {
  // Named for the request field that carries it (`dataset`: a population or a dataset of it).
  RETURN_IF_ERROR(ValidateIdentifier(name, "dataset"));
  absl::optional<ResolvedPopulation> found;
  RETURN_IF_ERROR(db_->Run("resolve population", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    found.reset();
    if (absl::optional<Population> p = PopulationNamed(tx, name); p.has_value()) {
      found = ResolvedPopulation{*std::move(p), ""};
      return absl::OkStatus();
    }
    const pqxx::result r =
        tx.exec_params(absl::StrCat("SELECT ", kPopulationColumns,
                                    " FROM datasets d JOIN populations p ON p.id = d.population_id "
                                    "WHERE d.name = $1"),
                       name);
    if (!r.empty()) {
      found = ResolvedPopulation{PopulationFromRow(r[0]), name};
      return absl::OkStatus();
    }
    // A public table is a dataset without a population: say so rather than "no such name".
    if (!tx.exec_params("SELECT 1 FROM datasets WHERE name = $1 AND is_public", name).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset ", name,
                       " is a public table: it has no population, no budget and no audit trail"));
    }
    return absl::OkStatus();
  }));
  if (!found.has_value()) {
    return absl::NotFoundError(absl::StrCat("no population or dataset is named ", name,
                                            " (`dpqctl population list` lists them)"));
  }
  return *std::move(found);
}

absl::Status PopulationStore::Drop(const std::string& name, const AdminAction* log) {
  RETURN_IF_ERROR(ValidateIdentifier(name, "population"));
  return db_->Run("drop population", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    const pqxx::result p = tx.exec_params(
        "SELECT id FROM populations WHERE name = $1 AND dropped_at IS NULL FOR UPDATE", name);
    if (p.empty()) return PopulationNotFound(name);
    const pqxx::result live = tx.exec_params(
        "SELECT name FROM datasets WHERE population_id = $1 AND dropped_at IS NULL ORDER BY name",
        p[0][0].as<int64_t>());
    if (!live.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "population ", name, " still has ", live.size(), " dataset(s), first ",
          live[0][0].as<std::string>(), ": drop them first (`dpqctl dataset drop NAME`)"));
    }
    tx.exec_params0("UPDATE populations SET dropped_at = now() WHERE id = $1",
                    p[0][0].as<int64_t>());
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> AttachPopulation(pqxx::transaction_base& tx,
                                         const query::DatasetSchema& schema) {
  const query::ColumnSchema* unit = UnitColumn(schema);
  if (unit == nullptr) return absl::InternalError("the privacy unit is not one of the columns");
  const std::string unit_type(query::ColumnTypeName(unit->type));
  if (schema.population.empty()) {
    // A population of its own, named after the dataset.
    if (!tx.exec_params("SELECT 1 FROM populations WHERE name = $1", schema.name).empty()) {
      return absl::AlreadyExistsError(absl::StrCat(
          "a population named ", schema.name, " already exists: add the dataset to it with ",
          "--population ", schema.name, ", or give the dataset another name"));
    }
    const pqxx::row r =
        tx.exec_params1("INSERT INTO populations (name, unit_type) VALUES ($1, $2) RETURNING id",
                        schema.name, unit_type);
    tx.exec_params0("INSERT INTO ledgers (population_id) VALUES ($1)", r[0].as<int64_t>());
    return r[0].as<int64_t>();
  }
  // FOR SHARE: a concurrent `population drop` (FOR UPDATE) waits for this dataset to exist.
  const pqxx::result r = tx.exec_params(
      "SELECT id, unit_type FROM populations WHERE name = $1 AND dropped_at IS NULL FOR SHARE",
      schema.population);
  if (r.empty()) {
    return absl::NotFoundError(absl::StrCat("population ", schema.population,
                                            " not found: create it first (`dpqctl population "
                                            "create ",
                                            schema.population, " --unit-type ", unit_type, "`)"));
  }
  if (r[0][1].as<std::string>() != unit_type) {
    return absl::InvalidArgumentError(
        absl::StrCat("the privacy unit ", schema.privacy_unit, " is ", unit_type,
                     " but population ", schema.population, " identifies people by ",
                     r[0][1].as<std::string>(), " values: declare the column as ",
                     r[0][1].as<std::string>(), " or use another population"));
  }
  const int64_t id = r[0][0].as<int64_t>();
  RETURN_IF_ERROR(CheckTimeBlocksFit(tx, id, schema));
  return id;
}

absl::Status CheckTimeBlocksFit(pqxx::transaction_base& tx, int64_t population_id,
                                const query::DatasetSchema& schema) {
  const pqxx::row r = tx.exec_params1(
      "SELECT coalesce((SELECT per_block FROM ledgers WHERE population_id = $1), false), "
      "(SELECT block_width FROM datasets WHERE population_id = $1 AND dropped_at IS NULL AND "
      "block_width IS NOT NULL LIMIT 1)",
      population_id);
  const std::string width =
      schema.time_blocks ? std::string(query::CalendarBucketName(schema.time_blocks->width)) : "";
  if (r[0].as<bool>() && width.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "population ", schema.population,
        " has a budget per time block: every dataset of it needs time blocks too (--block-by "
        "COLUMN --block-width ",
        r[1].is_null() ? std::string("day|week|month") : r[1].as<std::string>(), ")"));
  }
  if (!width.empty() && !r[1].is_null() && r[1].as<std::string>() != width) {
    return absl::InvalidArgumentError(
        absl::StrCat("the datasets of population ", schema.population, " have time blocks of one ",
                     r[1].as<std::string>(), ": use --block-width ", r[1].as<std::string>(),
                     " (the blocks of one population are the same calendar buckets)"));
  }
  return absl::OkStatus();
}

}  // namespace dpq::store
