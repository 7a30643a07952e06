-- Time blocks (docs/decisions.md, "Time blocks"): block composition after Lécuyer et al., "Privacy
-- Accounting and Quality Control in the Sage Differentially Private ML Platform" (SOSP 2019).
-- A dataset may declare a date or timestamp column whose calendar buckets (day, ISO week, month),
-- counted from the bucket of the column's declared lower bound, partition its rows into blocks. A
-- population whose budget is per block (ledgers.per_block) has one ledger cell per block: the
-- budget set on the ledger is every block's, unless a cell overrides it, and a query pays each
-- block of the range its text allows, in one transaction, reading only those blocks.
-- Forward-only: never edit once merged.

ALTER TABLE datasets
  ADD COLUMN block_column text,
  ADD COLUMN block_width text CHECK (block_width IN ('day', 'week', 'month')),
  ADD CONSTRAINT datasets_block_pair CHECK ((block_column IS NULL) = (block_width IS NULL));

-- Chosen with the budget while nothing is spent (`dpqctl budget set P --epsilon E --per-block`):
-- epsilon_total_units / delta_total_units are then each block's budget, and epsilon_spent_units /
-- delta_spent_units what every charge composed together (informative: no block is limited by it).
ALTER TABLE ledgers ADD COLUMN per_block boolean NOT NULL DEFAULT false;

-- One cell per block that was charged or given a budget of its own. A block without a cell has the
-- ledger's per-block budget and has spent nothing; the debit creates the cells it charges. Cells
-- are changed only under the population's ledger row lock (the debit takes it first), and locked
-- in block order.
CREATE TABLE ledger_blocks (
  population_id        bigint NOT NULL REFERENCES populations(id),
  block_start          date NOT NULL,
  -- NULL: the ledger's per-block total; set: this block's own (`budget set ... --block DAY`).
  epsilon_total_units  bigint CHECK (epsilon_total_units >= 0),
  delta_total_units    bigint
                       CHECK (delta_total_units >= 0 AND delta_total_units < 1000000000000000000),
  epsilon_spent_units  bigint NOT NULL DEFAULT 0 CHECK (epsilon_spent_units >= 0),
  delta_spent_units    bigint NOT NULL DEFAULT 0 CHECK (delta_spent_units >= 0),
  accountant_state     text NOT NULL DEFAULT '',
  PRIMARY KEY (population_id, block_start)
);

-- The blocks an allocation paid, 'WIDTH:YYYY-MM-DD:YYYY-MM-DD' (their width, the first and last
-- block's first day; '' when the ledger is not per block). Hashed into the chain when not empty (audit_chain.cc).
ALTER TABLE audit ADD COLUMN blocks text NOT NULL DEFAULT '';
