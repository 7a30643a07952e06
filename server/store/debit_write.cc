#include "server/store/debit_write.h"

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/base/sha256.h"
#include "server/query/calendar.h"
#include "server/store/array_literal.h"
#include "server/store/database.h"
#include "server/store/ledger_rows.h"

namespace dpq::store {
namespace {

std::string OptionalDouble(const absl::optional<double>& v) { return v ? ExactDouble(*v) : ""; }

// The admitted audit rows as the parallel arrays the write unnests ($2..$27 and $36, in that order),
// one element per row. Doubles travel as %.17g text and hashes as hex, so all round-trip exactly.
struct AuditRowArrays {
  ArrayLiteral seq, request_id, principal_id, analyst, fingerprint, aggregate, column, mechanism,
      epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, value, confidence,
      ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events,
      dataset_version, result, release_deferred, datasets, blocks;

  void Add(const Allocation& a) {
    seq.AddInt(a.seq);
    request_id.AddText(a.request_id);
    principal_id.AddInt(a.principal_id);
    analyst.AddText(a.analyst);
    fingerprint.AddText(a.fingerprint);
    aggregate.AddText(a.aggregate);
    column.AddText(a.column);
    mechanism.AddText(a.mechanism);
    epsilon_units.AddInt(a.epsilon_units);
    delta_units.AddInt(a.delta_units);
    sensitivity.AddText(ExactDouble(a.sensitivity));
    noise_scale.AddText(ExactDouble(a.noise_scale));
    count_noise_scale.AddText(ExactDouble(a.count_noise_scale));
    value.AddText(ExactDouble(a.value));
    confidence.AddText(ExactDouble(a.confidence));
    ci_lower.AddText(ExactDouble(a.ci_lower));
    ci_upper.AddText(ExactDouble(a.ci_upper));
    clamp_lower.AddText(OptionalDouble(a.clamp_lower));
    clamp_upper.AddText(OptionalDouble(a.clamp_upper));
    max_contributions.AddInt(a.max_contributions);
    prev_hash.AddText(ToHex(a.prev_hash));
    hash.AddText(ToHex(a.hash));
    events.AddText(a.events);
    dataset_version.AddInt(a.dataset_version);
    result.AddText(a.result);
    release_deferred.AddText(a.release_deferred ? "t" : "f");
    datasets.AddText(a.datasets);
    blocks.AddText(a.blocks);
  }
};

// The charged grants ($33..$35), the charged block cells ($38..$41) and the analysts' charged
// block spend ($42..$45), as parallel arrays.
struct ChargedArrays {
  ArrayLiteral grant_principal, grant_epsilon_spent, grant_delta_spent;
  ArrayLiteral block_start, block_epsilon_spent, block_delta_spent, block_state;
  ArrayLiteral cap_principal, cap_block, cap_epsilon_spent, cap_delta_spent;

  explicit ChargedArrays(const DebitAdmission& admission) {
    for (const auto& [principal, g] : admission.grants) {
      if (g.charged) {
        grant_principal.AddInt(principal);
        grant_epsilon_spent.AddInt(g.epsilon_spent_units);
        grant_delta_spent.AddInt(g.delta_spent_units);
      }
      for (const auto& [start, spent] : g.blocks) {
        if (!spent.charged) continue;
        cap_principal.AddInt(principal);
        cap_block.AddText(query::FormatDate(start));
        cap_epsilon_spent.AddInt(spent.epsilon_spent_units);
        cap_delta_spent.AddInt(spent.delta_spent_units);
      }
    }
    for (const auto& [start, cell] : admission.blocks) {
      if (!cell.charged) continue;
      block_start.AddText(query::FormatDate(start));
      block_epsilon_spent.AddInt(cell.epsilon_spent_units);
      block_delta_spent.AddInt(cell.delta_spent_units);
      block_state.AddText(cell.accountant_state);
    }
  }
};

// What the statement returns, one row each: (0, seq, created_at) per inserted audit row,
// (1, NULL, image) for the ledger row, (2, principal, image) per charged grant row.
enum ReturnedKind { kInsertedRow = 0, kLedgerImage = 1, kGrantImage = 2 };

}  // namespace

std::string LedgerImageSql() { return absl::StrCat("ROW(", kBudgetColumns, ")::text"); }

std::string GrantImageSql() { return absl::StrCat("ROW(", kGrantCapColumns, ")::text"); }

// Lock, compare, write, in one statement. held_ledger locks the ledger row only if its image is
// $46 (FOR UPDATE rechecks the condition on the newest version of a row updated meanwhile, under
// READ COMMITTED), and held_grants then locks the group's grant rows ($47) in principal order (the
// lock order of debit_group.h: ledger first, then grants by principal). `unchanged` holds when the
// ledger row was found and the grant rows are exactly the images $48 (as many rows as images, and
// each one among them: a row that appeared, vanished or changed fails it). Every data-modifying
// CTE writes only when it holds; data-modifying CTEs run to completion whatever the outer
// statement reads, on rows locked above, so the result is that of the statements in a row. Every
// value is a bound parameter (arrays, unnested in parallel).
std::string DebitWriteSql() {
  return absl::StrCat(
      "WITH held_ledger AS MATERIALIZED (SELECT 1 FROM ledgers l JOIN populations p ON p.id = "
      "l.population_id WHERE l.population_id = $1 AND ",
      LedgerImageSql(),
      " = $46 FOR UPDATE OF l), "
      "held_grants AS MATERIALIZED (SELECT ",
      GrantImageSql(),
      " AS image FROM population_caps c WHERE c.population_id = $1 AND c.principal_id = "
      "ANY($47::bigint[]) AND EXISTS (SELECT FROM held_ledger) ORDER BY c.principal_id "
      "FOR UPDATE OF c), "
      "unchanged AS MATERIALIZED (SELECT EXISTS (SELECT FROM held_ledger) AND (SELECT count(*) "
      "FROM held_grants) = cardinality($48::text[]) AND (SELECT count(*) FROM held_grants WHERE "
      "image = ANY($48::text[])) = cardinality($48::text[]) AS ok), "
      "ledger AS (UPDATE ledgers l SET epsilon_spent_units = $28, delta_spent_units = $29, "
      "audit_head_seq = $30, audit_head_hash = decode($31, 'hex'), accountant_state = $32, "
      "updated_at = now() FROM populations p WHERE l.population_id = $1 AND p.id = "
      "l.population_id AND (SELECT ok FROM unchanged) RETURNING ",
      LedgerImageSql(),
      " AS image), "
      "charged AS (UPDATE population_caps g SET epsilon_spent_units = c.epsilon_spent, "
      "delta_spent_units = c.delta_spent FROM unnest($33::bigint[], $34::bigint[], "
      "$35::bigint[]) AS c(principal, epsilon_spent, delta_spent) "
      "WHERE g.principal_id = c.principal AND g.population_id = $1 AND (SELECT ok FROM "
      "unchanged) RETURNING g.principal_id, ",
      GrantImageSql(),
      " AS image), "
      "cells AS (UPDATE ledger_blocks b SET epsilon_spent_units = c.epsilon_spent_units, "
      "delta_spent_units = c.delta_spent_units, accountant_state = c.accountant_state "
      "FROM unnest($38::date[], $39::bigint[], $40::bigint[], $41::text[]) AS c(block_start, "
      "epsilon_spent_units, delta_spent_units, accountant_state) "
      "WHERE b.population_id = $1 AND b.block_start = c.block_start AND (SELECT ok FROM "
      "unchanged) RETURNING 1), "
      "capcells AS (UPDATE block_caps b SET epsilon_spent_units = c.epsilon_spent_units, "
      "delta_spent_units = c.delta_spent_units FROM unnest($42::bigint[], $43::date[], "
      "$44::bigint[], $45::bigint[]) AS c(principal_id, block_start, epsilon_spent_units, "
      "delta_spent_units) WHERE b.population_id = $1 AND b.principal_id = c.principal_id AND "
      "b.block_start = c.block_start AND (SELECT ok FROM unchanged) RETURNING 1), "
      "inserted AS (INSERT INTO audit (population_id, seq, request_id, principal_id, analyst, "
      "fingerprint, aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, "
      "noise_scale, count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, "
      "clamp_upper, max_contributions, prev_hash, hash, events, dataset_version, result, "
      "release_deferred, datasets, blocks) "
      "SELECT $1, u.seq, u.request_id, u.principal_id, u.analyst, u.fingerprint, u.aggregate, "
      "u.column_name, u.mechanism, u.epsilon_units, u.delta_units, u.sensitivity::float8, "
      "u.noise_scale::float8, u.count_noise_scale::float8, u.val::float8, u.confidence::float8, "
      "u.ci_lower::float8, u.ci_upper::float8, nullif(u.clamp_lower, '')::float8, "
      "nullif(u.clamp_upper, '')::float8, u.max_contributions, decode(u.prev_hash, 'hex'), "
      "decode(u.hash, 'hex'), u.events, u.dataset_version, u.result, u.release_deferred, "
      "u.datasets, u.blocks FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], "
      "$6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::text[], "
      "$13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[], "
      "$20::text[], $21::int[], $22::text[], $23::text[], $24::text[], $25::bigint[], "
      "$26::text[], $27::bool[], $36::text[], $37::text[]) AS u(seq, request_id, principal_id, "
      "analyst, fingerprint, aggregate, column_name, mechanism, epsilon_units, delta_units, "
      "sensitivity, noise_scale, count_noise_scale, val, confidence, ci_lower, ci_upper, "
      "clamp_lower, clamp_upper, max_contributions, prev_hash, hash, events, dataset_version, "
      "result, release_deferred, datasets, blocks) WHERE (SELECT ok FROM unchanged) "
      "RETURNING seq, to_char(created_at AT TIME ZONE 'UTC', "
      "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS created_at) "
      "SELECT 0, seq, created_at FROM inserted "
      "UNION ALL SELECT 1, NULL, image FROM ledger "
      "UNION ALL SELECT 2, principal_id, image FROM charged");
}

absl::StatusOr<absl::optional<WrittenImages>> WriteIfUnchanged(pqxx::transaction_base& tx,
                                                               int64_t population_id,
                                                               DebitAdmission& admission,
                                                               const ExpectedRows& expected) {
  AuditRowArrays rows;
  for (size_t i : admission.admitted) rows.Add(admission.decided[i]->allocation);
  const ChargedArrays charged(admission);
  ArrayLiteral principals, grant_images;
  for (int64_t p : expected.principals) principals.AddInt(p);
  for (const std::string& image : expected.grant_images) grant_images.AddText(image);
  const LedgerState& ledger = admission.ledger;
  const pqxx::result returned = tx.exec_prepared(
      kDebitWrite, population_id, rows.seq.str(), rows.request_id.str(), rows.principal_id.str(),
      rows.analyst.str(), rows.fingerprint.str(), rows.aggregate.str(), rows.column.str(),
      rows.mechanism.str(), rows.epsilon_units.str(), rows.delta_units.str(),
      rows.sensitivity.str(), rows.noise_scale.str(), rows.count_noise_scale.str(),
      rows.value.str(), rows.confidence.str(), rows.ci_lower.str(), rows.ci_upper.str(),
      rows.clamp_lower.str(), rows.clamp_upper.str(), rows.max_contributions.str(),
      rows.prev_hash.str(), rows.hash.str(), rows.events.str(), rows.dataset_version.str(),
      rows.result.str(), rows.release_deferred.str(), ledger.budget.epsilon_spent_units,
      ledger.budget.delta_spent_units, ledger.head_seq, ToHex(ledger.head_hash),
      ledger.accountant_state, charged.grant_principal.str(), charged.grant_epsilon_spent.str(),
      charged.grant_delta_spent.str(), rows.datasets.str(), rows.blocks.str(),
      charged.block_start.str(), charged.block_epsilon_spent.str(), charged.block_delta_spent.str(),
      charged.block_state.str(), charged.cap_principal.str(), charged.cap_block.str(),
      charged.cap_epsilon_spent.str(), charged.cap_delta_spent.str(), expected.ledger_image,
      principals.str(), grant_images.str());
  if (returned.empty()) return absl::optional<WrittenImages>();  // a row differed
  const std::vector<size_t>& admitted = admission.admitted;
  const int64_t first_seq = admission.decided[admitted.front()]->allocation.seq;
  WrittenImages written;
  size_t inserted = 0;
  for (const auto& row : returned) {
    switch (row[0].as<int>()) {
      case kInsertedRow: {
        const int64_t s = row[1].as<int64_t>() - first_seq;
        if (s < 0 || s >= static_cast<int64_t>(admitted.size())) {
          return absl::InternalError("debit group: the INSERT returned an unexpected seq");
        }
        admission.decided[admitted[static_cast<size_t>(s)]]->allocation.created_at =
            row[2].as<std::string>();
        ++inserted;
        break;
      }
      case kLedgerImage: written.ledger_image = row[2].as<std::string>(); break;
      case kGrantImage:
        written.grant_images[row[1].as<int64_t>()] = row[2].as<std::string>();
        break;
      default: return absl::InternalError("debit group: the write returned an unknown row");
    }
  }
  if (inserted != admitted.size() || written.ledger_image.empty()) {
    return absl::InternalError(
        absl::StrCat("debit group: inserted ", inserted, " audit rows of ", admitted.size()));
  }
  return absl::optional<WrittenImages>(std::move(written));
}

}  // namespace dpq::store
