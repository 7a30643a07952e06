#include "server/store/collection_store.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "server/base/status_macros.h"
#include "server/base/validation.h"
#include "server/store/admin_log.h"
#include "server/store/array_literal.h"
#include "server/store/text_array.h"

namespace dpq::store {
namespace {

using dp::ldp::LdpReport;

constexpr char kSelectCollections[] = R"sql(
SELECT c.id, c.name, c.domain, c.epsilon, c.mechanism, c.reports_per_client,
       to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       coalesce((SELECT sum(k.reports) FROM ldp_clients k WHERE k.collection_id = c.id), 0)
  FROM ldp_collections c
)sql";

// Reports fetched per round trip by ForEachReport.
constexpr int kReportPage = 10000;

CollectionRecord FromRow(const pqxx::row& r) {
  CollectionRecord c;
  c.id = r[0].as<int64_t>();
  c.spec.name = r[1].as<std::string>();
  c.spec.domain = ParseTextArray(r[2]);
  c.spec.epsilon = r[3].as<double>();
  // The CHECK constraint admits only the four names.
  c.spec.mechanism = dp::ldp::ParseLdpMechanism(r[4].as<std::string>()).value();
  c.spec.reports_per_client = r[5].as<int32_t>();
  c.created_at = r[6].as<std::string>();
  c.reports = r[7].as<int64_t>();
  return c;
}

absl::Status CollectionNotFound(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("collection ", QuoteForMessage(name),
                                          " not found (`dpqctl collection list` lists them)"));
}

}  // namespace

absl::StatusOr<CollectionRecord> CollectionStore::Create(const CollectionSpec& spec,
                                                         const AdminAction* log) {
  ArrayLiteral domain;
  for (const std::string& v : spec.domain) domain.AddText(v);
  int64_t id = 0;
  absl::Status status = db_->Run("create collection", [&](pqxx::connection& c) {
    pqxx::work tx(c);
    id = tx.exec_params1(
               "INSERT INTO ldp_collections (name, domain, epsilon, mechanism, reports_per_client) "
               "VALUES ($1, $2::text[], $3::float8, $4, $5) RETURNING id",
               spec.name, domain.str(), ExactDouble(spec.epsilon),
               std::string(dp::ldp::LdpMechanismName(spec.mechanism)), spec.reports_per_client)[0]
             .as<int64_t>();
    if (log != nullptr) AppendAdminAction(tx, *log);
    tx.commit();
    return absl::OkStatus();
  });
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::AlreadyExistsError(
        absl::StrCat("collection ", QuoteForMessage(spec.name), " already exists"));
  }
  RETURN_IF_ERROR(status);
  return Get(spec.name);
}

absl::StatusOr<CollectionRecord> CollectionStore::Get(const std::string& name) {
  absl::optional<CollectionRecord> out;
  RETURN_IF_ERROR(db_->Run("get collection", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    pqxx::result r = tx.exec_params(absl::StrCat(kSelectCollections, " WHERE c.name = $1"), name);
    if (!r.empty()) out = FromRow(r[0]);
    return absl::OkStatus();
  }));
  if (!out) return CollectionNotFound(name);
  return *out;
}

absl::StatusOr<std::vector<CollectionRecord>> CollectionStore::List() {
  std::vector<CollectionRecord> out;
  RETURN_IF_ERROR(db_->Run("list collections", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const pqxx::row& r : tx.exec(absl::StrCat(kSelectCollections, " ORDER BY c.name"))) {
      out.push_back(FromRow(r));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status CollectionStore::Submit(const CollectionRecord& collection,
                                     const std::string& client_id, const LdpReport& report) {
  bool over_limit = false;
  RETURN_IF_ERROR(db_->Run("submit report", [&](pqxx::connection& c) {
    over_limit = false;
    pqxx::work tx(c);
    // The conflicting row is locked by ON CONFLICT DO UPDATE and its WHERE re-checked on the
    // newest version, so concurrent submissions of one client count one after the other.
    pqxx::result counted = tx.exec_params(
        "INSERT INTO ldp_clients (collection_id, client_id, reports) VALUES ($1, $2, 1) "
        "ON CONFLICT (collection_id, client_id) DO UPDATE SET reports = ldp_clients.reports + 1 "
        "WHERE ldp_clients.reports < $3 RETURNING reports",
        collection.id, client_id, collection.spec.reports_per_client);
    if (counted.empty()) {
      over_limit = true;
      return absl::OkStatus();  // rolled back: nothing stored
    }
    if (const auto* r = absl::get_if<dp::ldp::IndexReport>(&report)) {
      tx.exec_params0(
          "INSERT INTO ldp_reports (collection_id, client_id, report_index) VALUES ($1, $2, $3)",
          collection.id, client_id, static_cast<int64_t>(r->index));
    } else if (const auto* u = absl::get_if<dp::ldp::UnaryReport>(&report)) {
      tx.exec_params0(
          "INSERT INTO ldp_reports (collection_id, client_id, unary_bits) VALUES ($1, $2, $3)",
          collection.id, client_id, pqxx::binarystring(u->bits));
    } else if (const auto* o = absl::get_if<dp::ldp::OlhReport>(&report)) {
      tx.exec_params0(
          "INSERT INTO ldp_reports (collection_id, client_id, olh_seed, olh_hashed) "
          "VALUES ($1, $2, $3, $4)",
          collection.id, client_id, static_cast<int64_t>(o->seed), static_cast<int64_t>(o->hashed));
    } else {
      return absl::InvalidArgumentError("report is required");
    }
    tx.commit();
    return absl::OkStatus();
  }));
  if (over_limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "client ", QuoteForMessage(client_id), " has already submitted ",
        collection.spec.reports_per_client, " report(s) to collection ",
        QuoteForMessage(collection.spec.name), ", the limit per client set at creation"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CollectionStore::ForEachReport(
    int64_t collection_id, const std::function<void(const LdpReport&)>& visit,
    absl::Time deadline) {
  int64_t visited = 0;
  // Never retried: `visit` has side effects a second attempt would repeat.
  RETURN_IF_ERROR(db_->RunOnce("read reports", [&](pqxx::connection& c) {
    visited = 0;
    pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(c);
    int64_t after = 0;
    while (true) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            "the call's deadline passed while reading the reports (give a longer --timeout)");
      }
      pqxx::result page = tx.exec_params(
          "SELECT id, report_index, unary_bits, olh_seed, olh_hashed FROM ldp_reports "
          "WHERE collection_id = $1 AND id > $2 ORDER BY id LIMIT $3",
          collection_id, after, kReportPage);
      for (const pqxx::row& r : page) {
        LdpReport report;
        if (!r[1].is_null()) {
          report = dp::ldp::IndexReport{r[1].as<uint32_t>()};
        } else if (!r[2].is_null()) {
          pqxx::binarystring bits(r[2]);
          report = dp::ldp::UnaryReport{bits.str()};
        } else {
          report =
              dp::ldp::OlhReport{static_cast<uint64_t>(r[3].as<int64_t>()), r[4].as<uint32_t>()};
        }
        visit(report);
        ++visited;
      }
      if (page.size() < static_cast<size_t>(kReportPage)) break;
      after = page[page.size() - 1][0].as<int64_t>();
    }
    tx.commit();
    return absl::OkStatus();
  }));
  return visited;
}

}  // namespace dpq::store
