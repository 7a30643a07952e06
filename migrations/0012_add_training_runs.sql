-- DP-SGD training runs charged to the ledger. A run is a declaration: its sampling rate
-- q, noise multiplier z and the delta its epsilon is reported at, fixed when it starts. Its step
-- reports are audit rows (aggregate 'training', column_name = the run's name, fingerprint
-- 'training-v1|run=<id>|steps=<K>'), written by the ledger's one lock-and-debit transaction, so a
-- committed report and its charge can never be separated and the run's progress is read back from
-- the audit chain (no second counter that could disagree with it after a crash).
-- Only dpqd's login role reads or writes it: dpq_scan has no privilege on it (docs/database-roles.md).
-- Forward-only: never edit once merged.
CREATE TABLE training_runs (
  id                bigserial PRIMARY KEY,
  dataset_id        bigint NOT NULL REFERENCES datasets(id),
  name              text NOT NULL,
  principal_id      bigint NOT NULL REFERENCES principals(id),
  analyst           text NOT NULL,
  sampling_rate     double precision NOT NULL CHECK (sampling_rate > 0 AND sampling_rate <= 1),
  noise_multiplier  double precision NOT NULL CHECK (noise_multiplier > 0),
  delta_units       bigint NOT NULL CHECK (delta_units > 0 AND delta_units < 1000000000000000000),
  -- Set when z was calibrated from a target: the target and the steps it was calibrated for.
  target_epsilon    double precision,
  planned_steps     bigint CHECK (planned_steps > 0),
  created_at        timestamptz NOT NULL DEFAULT now(),
  -- A run is named alone (`dpqctl training step --run NAME`), so names are unique service-wide.
  UNIQUE (name)
);
REVOKE ALL ON training_runs FROM PUBLIC;

-- A run's reports, read by dataset and run name.
CREATE INDEX audit_training_reports ON audit (dataset_id, column_name) WHERE aggregate = 'training';
