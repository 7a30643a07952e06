-- `dataset drop`: the raw-row table is dropped, but the dataset row stays (marked) so its
-- ledger and audit rows remain verifiable. A dropped dataset's name stays reserved.
-- Forward-only: never edit once merged.
ALTER TABLE datasets ADD COLUMN dropped_at timestamptz;
