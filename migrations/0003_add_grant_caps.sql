-- Per-analyst caps on a dataset: a debit must fit both the dataset's ledger and the
-- analyst's cap, checked and written in the same transaction. Caps compose the analyst's charges
-- basically (sums of the nominal epsilon/delta units, exact). NULL cap = no cap.
-- Forward-only: never edit once merged.
ALTER TABLE grants
  ADD COLUMN epsilon_cap_units bigint CHECK (epsilon_cap_units > 0),
  ADD COLUMN delta_cap_units bigint CHECK (delta_cap_units >= 0),
  ADD COLUMN epsilon_spent_units bigint NOT NULL DEFAULT 0 CHECK (epsilon_spent_units >= 0),
  ADD COLUMN delta_spent_units bigint NOT NULL DEFAULT 0 CHECK (delta_spent_units >= 0);
