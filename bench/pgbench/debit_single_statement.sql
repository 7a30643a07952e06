-- The same debit as ONE statement (one round trip, the row lock held only inside it):
-- move the ledger head and the spent budget, and append the audit row from RETURNING.
-- The old head hash is not visible in RETURNING, so prev_hash is left empty here: the hash itself
-- still chains through the ledger head (sha256(old head || content)).
-- (pgbench substitutes ":name" even inside string literals, hence chr(58) for the ":" of the events.)
-- Variables (pgbench -D): ds = dataset id, principal = analyst principal id. Run with -M prepared.
\set eps 1000000000
WITH u AS (
  UPDATE ledgers
     SET epsilon_spent_units = epsilon_spent_units + :eps,
         audit_head_seq = audit_head_seq + 1,
         audit_head_hash = sha256(audit_head_hash ||
                                  convert_to('pgbench-single-' || (audit_head_seq + 1), 'UTF8')),
         updated_at = now()
   WHERE population_id = :ds AND epsilon_spent_units + :eps <= epsilon_total_units
  RETURNING population_id, audit_head_seq, audit_head_hash)
INSERT INTO audit (population_id, seq, request_id, principal_id, analyst, fingerprint, aggregate, column_name,
                   mechanism, epsilon_units, delta_units, sensitivity, noise_scale, count_noise_scale, value,
                   confidence, ci_lower, ci_upper, clamp_lower, clamp_upper, max_contributions, prev_hash,
                   hash, events)
SELECT u.population_id, u.audit_head_seq, 'pgbench-single-' || u.audit_head_seq, :principal, 'bench',
       'fp-pgbench', 'sum', 'x', 'laplace', :eps, 0, 10, 10000, 0, 15.5, 0.95, -29940, 29971, 0, 10, 1,
       '\x'::bytea, u.audit_head_hash, 'pure' || chr(58) || 'epsilon=0.001'
  FROM u;
