// The write of a debit group (step 5 of debit_group.h): one statement that locks the ledger row
// and the group's grant rows, checks each is exactly the row the group was decided on, and only
// then writes the audit rows, the ledger's new head and spend and the charged grants (and, on a
// per-block population, its cells). The locked path runs it inside its transaction, on rows it
// already holds; the one-trip path (known_ledgers.h) runs it alone, autocommitted, on rows it
// remembers. Store-internal: it includes libpqxx.
#ifndef DPQ_SERVER_STORE_DEBIT_WRITE_H_
#define DPQ_SERVER_STORE_DEBIT_WRITE_H_

#include <cstdint>
#include <string>

#include <pqxx/pqxx>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "server/store/debit_admission.h"
#include "server/store/known_ledgers.h"

namespace dpq::store {

// A population_caps row's figures, as the debit reads them (unqualified: every statement naming
// them reads population_caps alone, or beside relations without these column names).
inline constexpr char kGrantCapColumns[] =
    "principal_id, epsilon_cap_units, delta_cap_units, epsilon_spent_units, delta_spent_units";

// The image of a row, the text PostgreSQL prints for it: of a ledger row joined with its
// population (kBudgetColumns, aliases l and p), and of a grant row (kGrantCapColumns).
std::string LedgerImageSql();
std::string GrantImageSql();

// The statement, prepared as kDebitWrite by PrepareLedgerStatements (debit_group.h).
inline constexpr char kDebitWrite[] = "dpq_debit_write";
std::string DebitWriteSql();

// Writes `admission`'s admitted rows (at least one) if every row in `expected` is unchanged under
// the statement's locks, and fills in their created_at. nullopt when a row differed: nothing was
// written. Throws as libpqxx does.
absl::StatusOr<absl::optional<WrittenImages>> WriteIfUnchanged(pqxx::transaction_base& tx,
                                                               int64_t population_id,
                                                               DebitAdmission& admission,
                                                               const ExpectedRows& expected);

}  // namespace dpq::store

#endif  // DPQ_SERVER_STORE_DEBIT_WRITE_H_
