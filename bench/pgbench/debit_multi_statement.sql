-- One debit as the lock-then-write transaction dpq's BudgetLedger::Debit ran before group commit
-- (today it writes a whole group of debits in one such transaction; bench/README.md): lock the
-- dataset's ledger row, append one audit row chained to the ledger head, move the head and the
-- spent budget, commit.
-- (pgbench substitutes ":name" even inside string literals, hence chr(58) for the ":" of the events.)
-- Variables (pgbench -D): ds = dataset id, principal = analyst principal id.
-- Run with -M prepared, so :prev / :h travel as bytea parameters.
\set eps 1000000000
BEGIN;
SELECT audit_head_seq + 1 AS seq, audit_head_hash AS prev, epsilon_total_units - epsilon_spent_units AS remaining
  FROM ledgers WHERE population_id = :ds FOR UPDATE \gset
INSERT INTO audit (population_id, seq, request_id, principal_id, analyst, fingerprint, aggregate, column_name,
                   mechanism, epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, value,
                   confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash,
                   hash, events)
  VALUES (:ds, :seq, 'pgbench-multi-' || :seq, :principal, 'bench', 'fp-pgbench', 'sum', 'x', 'laplace',
          :eps, 0, 10, 10000, 0, 15.5, 0.95, -29940, 29971, 0, 10, 1, :prev,
          sha256(:prev || convert_to('pgbench-multi-' || :seq, 'UTF8')), 'pure' || chr(58) || 'epsilon=0.001')
  RETURNING hash AS h \gset
UPDATE ledgers SET epsilon_spent_units = epsilon_spent_units + :eps, audit_head_seq = :seq,
                   audit_head_hash = :h, updated_at = now()
  WHERE population_id = :ds;
COMMIT;
