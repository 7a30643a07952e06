#include "server/store/budget_ledger.h"

#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/base/status_macros.h"
#include "server/store/audit_chain.h"
#include "server/store/ledger_accounting.h"

namespace dpq::store {
namespace {

constexpr char kBudgetColumns[] =
    "l.dataset_id, d.name, l.accountant, l.epsilon_total_units, l.delta_total_units, "
    "l.epsilon_spent_units, l.delta_spent_units, l.audit_head_seq, l.audit_head_hash, "
    "l.accountant_state";

constexpr char kAllocationColumns[] =
    "seq, request_id, principal_id, analyst, "
    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), fingerprint, "
    "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
    "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
    "max_contributions, prev_hash, hash, events";

BudgetState BudgetFromRow(const pqxx::row& r) {
  BudgetState b;
  b.dataset_id = r[0].as<int64_t>();
  b.dataset = r[1].as<std::string>();
  b.accountant = r[2].as<std::string>();
  b.epsilon_total_units = r[3].as<int64_t>();
  b.delta_total_units = r[4].as<int64_t>();
  b.epsilon_spent_units = r[5].as<int64_t>();
  b.delta_spent_units = r[6].as<int64_t>();
  return b;
}

std::string Bytes(const pqxx::field& f) {
  pqxx::binarystring b(f);
  return b.str();
}

Allocation AllocationFromRow(const pqxx::row& r) {
  Allocation a;
  a.seq = r[0].as<int64_t>();
  a.request_id = r[1].as<std::string>();
  a.principal_id = r[2].as<int64_t>();
  a.analyst = r[3].as<std::string>();
  a.created_at = r[4].as<std::string>();
  a.fingerprint = r[5].as<std::string>();
  a.aggregate = r[6].as<std::string>();
  a.column = r[7].as<std::string>();
  a.mechanism = r[8].as<std::string>();
  a.epsilon_units = r[9].as<int64_t>();
  a.delta_units = r[10].as<int64_t>();
  a.sensitivity = r[11].as<double>();
  a.noise_scale = r[12].as<double>();
  a.count_noise_scale = r[13].as<double>();
  a.value = r[14].as<double>();
  a.confidence = r[15].as<double>();
  a.ci_lower = r[16].as<double>();
  a.ci_upper = r[17].as<double>();
  if (!r[18].is_null()) a.clamp_lower = r[18].as<double>();
  if (!r[19].is_null()) a.clamp_upper = r[19].as<double>();
  a.max_contributions = r[20].as<int>();
  a.prev_hash = Bytes(r[21]);
  a.hash = Bytes(r[22]);
  a.events = r[23].as<std::string>();
  return a;
}

absl::optional<Allocation> FindInTx(pqxx::transaction_base& tx, int64_t dataset_id,
                                    const std::string& request_id) {
  pqxx::result r = tx.exec_params(absl::StrCat("SELECT ", kAllocationColumns,
                                               " FROM audit WHERE dataset_id = $1 AND request_id = $2"),
                                  dataset_id, request_id);
  if (r.empty()) return absl::nullopt;
  return AllocationFromRow(r[0]);
}

// Checks and charges the analyst's cap on the dataset (basic composition of nominal charges), in the
// debit's transaction and after the ledger lock (one lock order: ledger, then grant).
// Principals without a grant row (admins) have no cap.
absl::Status ChargeGrant(pqxx::work& tx, int64_t dataset_id, const std::string& dataset,
                         const Allocation& a) {
  pqxx::result g = tx.exec_params(
      "SELECT epsilon_cap_units, delta_cap_units, epsilon_spent_units, delta_spent_units FROM grants "
      "WHERE principal_id = $1 AND dataset_id = $2 FOR UPDATE",
      a.principal_id, dataset_id);
  if (g.empty()) return absl::OkStatus();
  const int64_t eps_after = g[0][2].as<int64_t>() + a.epsilon_units;
  const int64_t delta_after = g[0][3].as<int64_t>() + a.delta_units;
  if ((!g[0][0].is_null() && eps_after > g[0][0].as<int64_t>()) ||
      (!g[0][1].is_null() && delta_after > g[0][1].as<int64_t>())) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "analyst %s's cap on dataset %s exhausted: requested epsilon=%.12g delta=%.12g, cap "
        "remaining epsilon=%s delta=%s",
        a.analyst, dataset, query::EpsilonFromUnits(a.epsilon_units), query::DeltaFromUnits(a.delta_units),
        g[0][0].is_null() ? "unlimited"
                          : absl::StrFormat("%.12g", query::EpsilonFromUnits(g[0][0].as<int64_t>() -
                                                                             g[0][2].as<int64_t>())),
        g[0][1].is_null() ? "unlimited"
                          : absl::StrFormat("%.12g", query::DeltaFromUnits(g[0][1].as<int64_t>() -
                                                                           g[0][3].as<int64_t>()))));
  }
  tx.exec_params0(
      "UPDATE grants SET epsilon_spent_units = $3, delta_spent_units = $4 "
      "WHERE principal_id = $1 AND dataset_id = $2",
      a.principal_id, dataset_id, eps_after, delta_after);
  return absl::OkStatus();
}

// The dataset's ledger row (kBudgetColumns). With `lock`, the row stays locked until the
// transaction ends: every budget change of a dataset is serialised on it. NOT_FOUND when the
// dataset has no ledger.
absl::StatusOr<pqxx::row> ReadLedger(pqxx::transaction_base& tx, int64_t dataset_id, bool lock) {
  pqxx::result r = tx.exec_params(
      absl::StrCat("SELECT ", kBudgetColumns,
                   " FROM ledgers l JOIN datasets d ON d.id = l.dataset_id WHERE l.dataset_id = $1",
                   lock ? " FOR UPDATE OF l" : ""),
      dataset_id);
  if (r.empty()) return absl::NotFoundError(absl::StrCat("no ledger for dataset id ", dataset_id));
  return r[0];
}

absl::StatusOr<pqxx::row> LockLedger(pqxx::work& tx, int64_t dataset_id) {
  return ReadLedger(tx, dataset_id, /*lock=*/true);
}

std::string OptionalDouble(const absl::optional<double>& v) { return v ? ExactDouble(*v) : ""; }

}  // namespace

absl::Status BudgetExhausted(const BudgetState& budget, int64_t epsilon_units, int64_t delta_units) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "privacy budget of dataset %s exhausted: requested epsilon=%.12g delta=%.12g, remaining "
      "epsilon=%.12g delta=%.12g",
      budget.dataset, query::EpsilonFromUnits(epsilon_units), query::DeltaFromUnits(delta_units),
      budget.epsilon_remaining(), budget.delta_remaining()));
}

absl::StatusOr<BudgetState> BudgetLedger::Get(int64_t dataset_id) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("read budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::read_transaction tx(c);
    ASSIGN_OR_RETURN(pqxx::row row, ReadLedger(tx, dataset_id, /*lock=*/false));
    b = BudgetFromRow(row);
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<BudgetState> BudgetLedger::Set(int64_t dataset_id, int64_t epsilon_total_units,
                                              int64_t delta_total_units, const std::string& accountant) {
  BudgetState b;
  RETURN_IF_ERROR(db_->Run("set budget", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, LockLedger(tx, dataset_id));
    b = BudgetFromRow(locked);
    const std::string state = locked[9].as<std::string>();
    const bool anything_spent = locked[7].as<int64_t>() > 0;
    const std::string chosen = accountant.empty() ? b.accountant : accountant;
    RETURN_IF_ERROR(ValidateLedgerAccountant(chosen));
    if (chosen != b.accountant && anything_spent) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the accountant of dataset ", b.dataset, " is ", b.accountant,
          " and cannot change once budget was spent"));
    }
    if (chosen != "basic" && delta_total_units == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("delta must be > 0 for the ", chosen, " accountant"));
    }
    b.accountant = chosen;
    if (chosen != "basic") {
      // The spent epsilon of a converted accountant depends on the delta it is converted at.
      ASSIGN_OR_RETURN(b.epsilon_spent_units, SpentEpsilonUnits(chosen, state, delta_total_units));
      b.delta_spent_units = state.empty() ? 0 : delta_total_units;
    }
    if (epsilon_total_units < b.epsilon_spent_units || delta_total_units < b.delta_spent_units) {
      return absl::FailedPreconditionError(absl::StrCat(
          "budget cannot go below what is already spent (epsilon_spent=", b.epsilon_spent(),
          ", delta_spent=", b.delta_spent(), ")"));
    }
    tx.exec_params0(
        "UPDATE ledgers SET accountant = $2, epsilon_total_units = $3, delta_total_units = $4, "
        "epsilon_spent_units = $5, delta_spent_units = $6, updated_at = now() WHERE dataset_id = $1",
        dataset_id, b.accountant, epsilon_total_units, delta_total_units, b.epsilon_spent_units,
        b.delta_spent_units);
    tx.commit();
    b.epsilon_total_units = epsilon_total_units;
    b.delta_total_units = delta_total_units;
    return absl::OkStatus();
  }));
  return b;
}

absl::StatusOr<absl::optional<Allocation>> BudgetLedger::FindAllocation(int64_t dataset_id,
                                                                        const std::string& request_id) {
  absl::optional<Allocation> a;
  RETURN_IF_ERROR(db_->Run("find allocation", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    a = FindInTx(tx, dataset_id, request_id);
    return absl::OkStatus();
  }));
  return a;
}

absl::StatusOr<DebitResult> BudgetLedger::Debit(int64_t dataset_id, Allocation allocation) {
  DebitResult result;
  RETURN_IF_ERROR(db_->Run("debit", [&](pqxx::connection& c) -> absl::Status {
    pqxx::work tx(c);
    ASSIGN_OR_RETURN(pqxx::row locked, LockLedger(tx, dataset_id));
    BudgetState budget = BudgetFromRow(locked);
    const int64_t head_seq = locked[7].as<int64_t>();
    const std::string head_hash = Bytes(locked[8]);

    // Under the ledger lock, so two requests with one id cannot both pass this check.
    if (absl::optional<Allocation> prior = FindInTx(tx, dataset_id, allocation.request_id)) {
      if (prior->fingerprint != allocation.fingerprint) {
        return absl::AlreadyExistsError(absl::StrCat(
            "request_id ", allocation.request_id,
            " is already taken by a different query or analyst; use a new id"));
      }
      result.allocation = std::move(*prior);
      result.budget = budget;
      result.replayed = true;
      return absl::OkStatus();
    }

    // Exact integer arithmetic (privacy_units.h): a charge fits iff it is at most what remains.
    if (allocation.epsilon_units <= 0 || allocation.delta_units < 0) {
      return absl::InvalidArgumentError("a charge needs epsilon > 0 and delta >= 0");
    }
    int64_t eps_after, delta_after;
    std::string state = locked[9].as<std::string>();
    if (budget.accountant == "basic") {
      if (allocation.epsilon_units > budget.epsilon_remaining_units() ||
          allocation.delta_units > budget.delta_remaining_units()) {
        return BudgetExhausted(budget, allocation.epsilon_units, allocation.delta_units);
      }
      eps_after = budget.epsilon_spent_units + allocation.epsilon_units;
      delta_after = budget.delta_spent_units + allocation.delta_units;
    } else {
      ASSIGN_OR_RETURN(ComposedState composed, ComposeCharge(budget, state, allocation.events));
      eps_after = composed.epsilon_spent_units;
      delta_after = composed.delta_spent_units;
      state = std::move(composed.state);
    }

    RETURN_IF_ERROR(ChargeGrant(tx, dataset_id, budget.dataset, allocation));

    allocation.seq = head_seq + 1;
    allocation.prev_hash = head_hash;
    allocation.hash = ChainHash(head_hash, dataset_id, allocation);
    const Allocation& a = allocation;
    pqxx::row ins = tx.exec_params1(
        "INSERT INTO audit (dataset_id, seq, request_id, principal_id, analyst, fingerprint, "
        "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, noise_scale, "
        "count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, "
        "max_contributions, prev_hash, hash, events) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
        "$10, $11, $12::float8, $13::float8, $14::float8, $15::float8, $16::float8, "
        "$17::float8, $18::float8, nullif($19, '')::float8, nullif($20, '')::float8, $21, $22, $23, $24) "
        "RETURNING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
        dataset_id, a.seq, a.request_id, a.principal_id, a.analyst, a.fingerprint, a.aggregate,
        a.column, a.mechanism, a.epsilon_units, a.delta_units,
        ExactDouble(a.sensitivity), ExactDouble(a.noise_scale), ExactDouble(a.count_noise_scale),
        ExactDouble(a.value), ExactDouble(a.confidence), ExactDouble(a.ci_lower),
        ExactDouble(a.ci_upper), OptionalDouble(a.clamp_lower), OptionalDouble(a.clamp_upper),
        a.max_contributions, pqxx::binarystring(a.prev_hash), pqxx::binarystring(a.hash), a.events);
    allocation.created_at = ins[0].as<std::string>();
    tx.exec_params0(
        "UPDATE ledgers SET epsilon_spent_units = $2, delta_spent_units = $3, "
        "audit_head_seq = $4, audit_head_hash = $5, accountant_state = $6, updated_at = now() "
        "WHERE dataset_id = $1",
        dataset_id, eps_after, delta_after, allocation.seq,
        pqxx::binarystring(allocation.hash), state);
    tx.commit();
    budget.epsilon_spent_units = eps_after;
    budget.delta_spent_units = delta_after;
    result.allocation = allocation;
    result.budget = budget;
    result.replayed = false;
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<std::vector<Allocation>> BudgetLedger::ListAllocations(int64_t dataset_id) {
  std::vector<Allocation> out;
  RETURN_IF_ERROR(db_->Run("list audit", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec_params(
             absl::StrCat("SELECT ", kAllocationColumns, " FROM audit WHERE dataset_id = $1 ORDER BY seq"),
             dataset_id)) {
      out.push_back(AllocationFromRow(row));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<BudgetState>> BudgetLedger::ListBudgets() {
  std::vector<BudgetState> out;
  RETURN_IF_ERROR(db_->Run("list budgets", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec(absl::StrCat(
             "SELECT ", kBudgetColumns, " FROM ledgers l JOIN datasets d ON d.id = l.dataset_id ORDER BY d.name"))) {
      out.push_back(BudgetFromRow(row));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<std::vector<BudgetLedger::AnalystSpend>> BudgetLedger::SpendByAnalyst() {
  std::vector<AnalystSpend> out;
  RETURN_IF_ERROR(db_->Run("spend by analyst", [&](pqxx::connection& c) {
    pqxx::read_transaction tx(c);
    for (const auto& row : tx.exec(
             "SELECT d.name, a.analyst, sum(a.epsilon_units)::bigint, sum(a.delta_units)::bigint FROM audit a "
             "JOIN datasets d ON d.id = a.dataset_id GROUP BY d.name, a.analyst ORDER BY 1, 2")) {
      out.push_back({row[0].as<std::string>(), row[1].as<std::string>(),
                     query::EpsilonFromUnits(row[2].as<int64_t>()),
                     query::DeltaFromUnits(row[3].as<int64_t>())});
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<BudgetLedger::Verification> BudgetLedger::Verify(int64_t dataset_id) {
  Verification v;
  std::vector<Allocation> rows;
  BudgetState budget;
  int64_t head_seq = 0;
  std::string head_hash, state;
  // One snapshot: rows, head and state are read in the same repeatable-read transaction.
  RETURN_IF_ERROR(db_->Run("verify audit", [&](pqxx::connection& c) -> absl::Status {
    pqxx::transaction<pqxx::isolation_level::repeatable_read, pqxx::readwrite_policy::read_only> tx(c);
    ASSIGN_OR_RETURN(pqxx::row ledger, ReadLedger(tx, dataset_id, /*lock=*/false));
    budget = BudgetFromRow(ledger);
    head_seq = ledger[7].as<int64_t>();
    head_hash = Bytes(ledger[8]);
    state = ledger[9].as<std::string>();
    rows.clear();
    for (const auto& row : tx.exec_params(
             absl::StrCat("SELECT ", kAllocationColumns, " FROM audit WHERE dataset_id = $1 ORDER BY seq"),
             dataset_id)) {
      rows.push_back(AllocationFromRow(row));
    }
    return absl::OkStatus();
  }));
  v.entries = static_cast<int64_t>(rows.size());
  v.epsilon_spent_ledger_units = budget.epsilon_spent_units;
  v.delta_spent_ledger_units = budget.delta_spent_units;

  std::string expected_prev = GenesisHash();
  for (size_t i = 0; i < rows.size() && v.first_broken_seq == 0; ++i) {
    const Allocation& a = rows[i];
    const int64_t want_seq = static_cast<int64_t>(i) + 1;
    if (a.seq != want_seq) {
      v.first_broken_seq = want_seq;
      v.reason = absl::StrCat("row ", want_seq, " is missing (next row has seq ", a.seq, ")");
    } else if (a.prev_hash != expected_prev) {
      v.first_broken_seq = a.seq;
      v.reason = absl::StrCat("row ", a.seq, " does not link to the previous row's hash");
    } else if (ChainHash(a.prev_hash, dataset_id, a) != a.hash) {
      v.first_broken_seq = a.seq;
      v.reason = absl::StrCat("row ", a.seq, " content does not match its hash (altered)");
    }
    expected_prev = a.hash;
  }
  const int64_t last_seq = rows.empty() ? 0 : rows.back().seq;
  if (v.first_broken_seq == 0 && (head_seq != last_seq || head_hash != expected_prev)) {
    v.first_broken_seq = std::min(head_seq, last_seq) + 1;
    v.reason = absl::StrCat("the ledger head (seq ", head_seq, ") does not match the chain's last row (seq ",
                            last_seq, "): rows were removed or added outside dpqd");
  }

  // Recompute what the ledger should have spent.
  if (budget.accountant == "basic") {
    for (const Allocation& a : rows) {
      v.epsilon_spent_recomputed_units += a.epsilon_units;
      v.delta_spent_recomputed_units += a.delta_units;
    }
  } else {
    BudgetState fresh = budget;
    fresh.epsilon_spent_units = 0;
    fresh.epsilon_total_units = INT64_MAX;  // recompute, never refuse
    std::string recomputed_state;
    for (const Allocation& a : rows) {
      auto composed = ComposeCharge(fresh, recomputed_state, a.events);
      if (!composed.ok()) {
        v.reason = absl::StrCat("row ", a.seq, ": its events do not compose: ", composed.status().message());
        if (v.first_broken_seq == 0) v.first_broken_seq = a.seq;
        break;
      }
      recomputed_state = std::move(composed->state);
      fresh.epsilon_spent_units = composed->epsilon_spent_units;
    }
    ASSIGN_OR_RETURN(v.epsilon_spent_recomputed_units,
                     SpentEpsilonUnits(budget.accountant, recomputed_state, budget.delta_total_units));
    v.delta_spent_recomputed_units = recomputed_state.empty() ? 0 : budget.delta_total_units;
    if (v.reason.empty() && recomputed_state != state) {
      v.reason = "the ledger's accountant state differs from the one recomputed from the audit rows";
    }
  }
  if (v.reason.empty() && (v.epsilon_spent_recomputed_units != budget.epsilon_spent_units ||
                           v.delta_spent_recomputed_units != budget.delta_spent_units)) {
    v.reason = "the ledger's spent budget differs from the sum recomputed from the audit rows";
  }
  v.ok = v.reason.empty();
  return v;
}

}  // namespace dpq::store
