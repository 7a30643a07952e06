-- Multi-valued releases, the result cache and public categories.
-- Forward-only: never edit once merged.

-- The dataset version an answer was computed on (the cache key together with the fingerprint) and
-- the full released result as canonical JSON (server/engine/release_codec.h): every released value
-- with its key, interval and noise scale, for quantiles, histograms, group-by and query batches.
-- Empty for single-valued answers, whose value is in `value`. Both are covered by the hash chain.
ALTER TABLE audit
  ADD COLUMN dataset_version bigint NOT NULL DEFAULT 0,
  ADD COLUMN result text NOT NULL DEFAULT '';
-- Led by the fingerprint: an index led by dataset_id tempts the planner into scanning a young
-- dataset's whole history for request-id lookups (measured in bench/README.md).
CREATE INDEX audit_cache_lookup ON audit (fingerprint, dataset_id, dataset_version);

-- Public categories of a text column, declared at dataset creation without looking at the data:
-- a group-by or histogram over such a column releases every declared value (no partition selection).
CREATE TABLE dataset_categories (
  dataset_id   bigint NOT NULL REFERENCES datasets(id),
  column_name  text NOT NULL,
  position     int NOT NULL,
  value        text NOT NULL,
  PRIMARY KEY (dataset_id, column_name, position),
  UNIQUE (dataset_id, column_name, value)
);

-- "pld" ledgers: adaptive queries are composed by the RDP filter, declared query batches are
-- priced jointly by PLD and charged as one (epsilon, delta) event (server/store/ledger_accounting.h).
ALTER TABLE ledgers
  DROP CONSTRAINT ledgers_accountant_known,
  ADD CONSTRAINT ledgers_accountant_known
    CHECK (accountant IN ('basic', 'advanced', 'rdp', 'zcdp', 'pld'));

-- Domain preset of a dataset's budget (server/query/epsilon_guidance.h): budgets and queries
-- outside its usual epsilon range are answered with a warning. NULL: no preset.
ALTER TABLE datasets ADD COLUMN epsilon_preset text;
