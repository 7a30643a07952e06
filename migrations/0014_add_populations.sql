-- Populations: a named set of people with one privacy-unit domain. Every dataset about them
-- belongs to it, and every query of any of those datasets debits the population's ONE ledger, so a
-- person in all of them is protected by one budget, not one per dataset (docs/decisions.md,
-- "Populations"). The ledger, the audit chain, its releases and checkpoints, and the per-analyst
-- caps move from the dataset to its population. Public lookup tables have no population.
-- Forward-only: never edit once merged.

CREATE TABLE populations (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
  -- The declared type of the privacy unit in every dataset of the population.
  unit_type   text NOT NULL CHECK (unit_type IN ('integer', 'double', 'text')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  dropped_at  timestamptz
);

-- Every existing dataset becomes a population of its own with the dataset's name and id. The id is
-- kept because the audit chain hashes the ledger's id into every row (server/store/audit_chain.cc):
-- with the same number, every existing chain verifies unchanged under its population.
INSERT INTO populations (id, name, unit_type, created_at, dropped_at)
SELECT d.id, d.name, c.type, d.created_at, d.dropped_at
FROM datasets d JOIN dataset_columns c ON c.dataset_id = d.id AND c.name = d.privacy_unit;
SELECT setval(pg_get_serial_sequence('populations', 'id'),
              coalesce(greatest((SELECT max(id) FROM populations), (SELECT max(id) FROM datasets)), 1),
              EXISTS (SELECT FROM datasets));

-- A public table (is_public) states that its contents are not personal: no privacy unit
-- (privacy_unit = ''), no population, no ledger.
ALTER TABLE datasets
  ADD COLUMN population_id bigint REFERENCES populations(id),
  ADD COLUMN is_public boolean NOT NULL DEFAULT false;
UPDATE datasets SET population_id = id;
ALTER TABLE datasets
  ADD CONSTRAINT datasets_population_unless_public CHECK ((population_id IS NULL) = is_public),
  ADD CONSTRAINT datasets_unit_unless_public CHECK ((privacy_unit = '') = is_public);
CREATE INDEX datasets_population_id ON datasets (population_id);

-- The ledger, audit chain, releases and verification checkpoints are the population's. Renaming
-- changes no row (the append-only triggers fire on UPDATE, not on ALTER).
ALTER TABLE ledgers RENAME COLUMN dataset_id TO population_id;
ALTER TABLE ledgers DROP CONSTRAINT ledgers_dataset_id_fkey,
  ADD CONSTRAINT ledgers_population_id_fkey FOREIGN KEY (population_id) REFERENCES populations(id);
ALTER TABLE audit RENAME COLUMN dataset_id TO population_id;
ALTER TABLE audit DROP CONSTRAINT audit_dataset_id_fkey,
  ADD CONSTRAINT audit_population_id_fkey FOREIGN KEY (population_id) REFERENCES populations(id);
ALTER TABLE releases RENAME COLUMN dataset_id TO population_id;
ALTER TABLE audit_verified RENAME COLUMN dataset_id TO population_id;
ALTER TABLE audit_verified DROP CONSTRAINT audit_verified_dataset_id_fkey,
  ADD CONSTRAINT audit_verified_population_id_fkey
    FOREIGN KEY (population_id) REFERENCES populations(id);

-- The datasets a charge paid to read ('patients' or 'patients,visits' for a join; '' for the rows
-- written before populations, which read the dataset whose id their population has). Hashed into
-- the chain when not empty (server/store/audit_chain.cc), so the record of what was read cannot be
-- altered unseen.
ALTER TABLE audit ADD COLUMN datasets text NOT NULL DEFAULT '';

-- Caps are per analyst per population: an analyst granted two datasets of one population has one
-- cap over both. Grants stay per dataset (who may read what). A row exists for every analyst
-- granted any dataset of the population (the grant creates it) and keeps the analyst's spend across
-- revokes and grants again. The caps of each existing grant move over unchanged (each existing
-- dataset is a population of its own).
CREATE TABLE population_caps (
  principal_id         bigint NOT NULL REFERENCES principals(id),
  population_id        bigint NOT NULL REFERENCES populations(id),
  epsilon_cap_units    bigint CHECK (epsilon_cap_units > 0),
  delta_cap_units      bigint CHECK (delta_cap_units >= 0),
  epsilon_spent_units  bigint NOT NULL DEFAULT 0 CHECK (epsilon_spent_units >= 0),
  delta_spent_units    bigint NOT NULL DEFAULT 0 CHECK (delta_spent_units >= 0),
  PRIMARY KEY (population_id, principal_id)
);
INSERT INTO population_caps (principal_id, population_id, epsilon_cap_units, delta_cap_units,
                             epsilon_spent_units, delta_spent_units)
SELECT g.principal_id, d.population_id, g.epsilon_cap_units, g.delta_cap_units,
       g.epsilon_spent_units, g.delta_spent_units
FROM grants g JOIN datasets d ON d.id = g.dataset_id;
ALTER TABLE grants
  DROP COLUMN epsilon_cap_units,
  DROP COLUMN delta_cap_units,
  DROP COLUMN epsilon_spent_units,
  DROP COLUMN delta_spent_units;

-- The epsilon preset describes a budget, so it moves to the population's ledger with it.
ALTER TABLE ledgers ADD COLUMN epsilon_preset text;
UPDATE ledgers l SET epsilon_preset = d.epsilon_preset FROM datasets d WHERE d.id = l.population_id;
ALTER TABLE datasets DROP COLUMN epsilon_preset;
