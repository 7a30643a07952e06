-- Checkpoints of audit verification: the last row of each hash chain that a verification found
-- intact, and the recomputation of the ledger up to it, so that a later verification (by any dpqd
-- on this database, after any restart) reads only the rows appended since. A checkpoint is never
-- trusted blindly: a verification that starts from it first checks that the row at `seq` still
-- has `hash`, and a full verification from genesis (on demand, and every
-- --audit-full-verify-seconds) checks the rows before it again (docs/decisions.md, "Audit verify").
-- Written only by dpqd after a verification that found nothing wrong; a checkpoint only moves
-- forward. Not append-only: it is a cache of a result, and deleting a row only makes the next
-- verification of that chain a full one.
-- Forward-only: never edit once merged.
CREATE TABLE audit_verified (
  dataset_id           bigint PRIMARY KEY REFERENCES datasets(id),
  seq                  bigint NOT NULL CHECK (seq >= 1),
  hash                 bytea NOT NULL CHECK (length(hash) = 32),
  -- The ledger's accountant when the rows up to `seq` were recomputed with it.
  accountant           text NOT NULL,
  -- The charges of rows 1..seq added up (what a basic ledger's spent must equal).
  epsilon_spent_units  bigint NOT NULL CHECK (epsilon_spent_units >= 0),
  delta_spent_units    bigint NOT NULL CHECK (delta_spent_units >= 0),
  -- Non-basic ledgers: the events of rows 1..seq composed (ComposeCharge), '' for basic ones.
  accountant_state     text NOT NULL,
  verified_at          timestamptz NOT NULL DEFAULT now(),
  -- The last verification of this chain that read it from genesis (NULL: none yet).
  full_verified_at     timestamptz
);

-- The admin log's checkpoint: one row at most.
CREATE TABLE admin_log_verified (
  id                boolean PRIMARY KEY DEFAULT true CHECK (id),
  seq               bigint NOT NULL CHECK (seq >= 1),
  hash              bytea NOT NULL CHECK (length(hash) = 32),
  verified_at       timestamptz NOT NULL DEFAULT now(),
  full_verified_at  timestamptz
);

REVOKE ALL ON audit_verified, admin_log_verified FROM PUBLIC;
