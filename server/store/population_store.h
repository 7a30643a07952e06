// Populations: named sets of people with one privacy-unit domain. Every dataset of a population
// is about the same people (their privacy-unit columns share the domain), and every query of any
// of them debits the population's one ledger (budget_ledger.h, keyed by population id), so the
// population's epsilon bounds what is learnt about a person across all of its datasets
// (docs/threat-model.md, "Populations").
#ifndef DPQ_SERVER_STORE_POPULATION_STORE_H_
#define DPQ_SERVER_STORE_POPULATION_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "absl/status/statusor.h"
#include "server/query/dataset_schema.h"
#include "server/store/audit_chain.h"
#include "server/store/database.h"

namespace dpq::store {

struct Population {
  int64_t id = 0;
  std::string name;
  query::ColumnType unit_type = query::ColumnType::kInteger;
  std::string created_at;  // RFC 3339 UTC
  bool dropped = false;
  std::vector<std::string> datasets;  // its live datasets, by name
};

// A population named directly, or through one of its datasets (`dpqctl budget show visits`).
struct ResolvedPopulation {
  Population population;
  std::string via_dataset;  // the dataset name that led to it; empty when named directly
};

class PopulationStore {
 public:
  explicit PopulationStore(Database* db) : db_(db) {}

  // A population with an empty ledger (no budget). ALREADY_EXISTS for a taken name (also taken by
  // the population a dataset got of its own), INVALID_ARGUMENT for a malformed name.
  absl::StatusOr<Population> Create(const std::string& name, query::ColumnType unit_type,
                                    const AdminAction* log = nullptr);
  // Every population, dropped ones last, each with its live datasets.
  absl::StatusOr<std::vector<Population>> List();
  // NOT_FOUND naming `dpqctl population list`.
  absl::StatusOr<Population> Get(const std::string& name);
  // A population by its name; else the population of the dataset of that name (dropped datasets
  // included: their ledger and audit stay). NOT_FOUND when neither exists.
  absl::StatusOr<ResolvedPopulation> Resolve(const std::string& name);
  // Marks it dropped (its ledger and audit stay, readable). FAILED_PRECONDITION while a live
  // dataset belongs to it (drop those first).
  absl::Status Drop(const std::string& name, const AdminAction* log = nullptr);

 private:
  Database* db_;
};

// Inside a dataset's creation transaction: the population the new dataset joins. With
// schema.population empty, a new population of its own named after the dataset, with an empty
// ledger (ALREADY_EXISTS when a population has that name, saying how to join it). Otherwise the
// live population of that name, locked against a concurrent drop (NOT_FOUND saying how to create
// it; INVALID_ARGUMENT when the dataset's privacy-unit column is not of the population's unit
// type). Returns its id.
// FAILED_PRECONDITION when the population's budget is per block and `schema` has no time blocks;
// INVALID_ARGUMENT when its other datasets' blocks have another width.
absl::Status CheckTimeBlocksFit(pqxx::transaction_base& tx, int64_t population_id,
                                const query::DatasetSchema& schema);

absl::StatusOr<int64_t> AttachPopulation(pqxx::transaction_base& tx,
                                         const query::DatasetSchema& schema);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_POPULATION_STORE_H_
