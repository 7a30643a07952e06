-- Local-DP collections: clients randomize on their side and send reports; the server
-- stores the reports only (never a true value) and estimates frequencies from them.
-- Forward-only: never edit once merged.
CREATE TABLE ldp_collections (
  id                  bigserial PRIMARY KEY,
  name                text NOT NULL UNIQUE,
  domain              text[] NOT NULL CHECK (cardinality(domain) BETWEEN 2 AND 1024),
  epsilon             float8 NOT NULL CHECK (epsilon > 0 AND epsilon <= 20),
  mechanism           text NOT NULL CHECK (mechanism IN ('rr', 'krr', 'oue', 'olh')),
  reports_per_client  integer NOT NULL CHECK (reports_per_client >= 1),
  created_at          timestamptz NOT NULL DEFAULT now(),
  CHECK (mechanism <> 'rr' OR cardinality(domain) = 2)
);

-- How many reports each client id has submitted to a collection. A submission increments its row
-- with INSERT .. ON CONFLICT DO UPDATE .. WHERE reports < limit, which locks the row: two
-- concurrent submissions of one client serialise on it and cannot both pass the limit.
CREATE TABLE ldp_clients (
  collection_id  bigint NOT NULL REFERENCES ldp_collections (id),
  client_id      text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 128),
  reports        integer NOT NULL CHECK (reports >= 1),
  PRIMARY KEY (collection_id, client_id)
);

-- The reports as sent, exactly one encoding per row: an index (rr, krr), the OUE bit vector, or
-- the OLH (seed, hashed) pair (seed: the uint64 bit pattern as a signed bigint).
CREATE TABLE ldp_reports (
  id             bigserial PRIMARY KEY,
  collection_id  bigint NOT NULL REFERENCES ldp_collections (id),
  client_id      text NOT NULL,
  report_index   integer CHECK (report_index >= 0),
  unary_bits     bytea,
  olh_seed       bigint,
  olh_hashed     integer CHECK (olh_hashed >= 0),
  received_at    timestamptz NOT NULL DEFAULT now(),
  CHECK (num_nonnulls(report_index, unary_bits, olh_seed) = 1),
  CHECK ((olh_seed IS NULL) = (olh_hashed IS NULL))
);
CREATE INDEX ldp_reports_by_collection ON ldp_reports (collection_id, id);

-- Aggregate scans run as dpq_scan (0010): it must not read collections (docs/database-roles.md).
REVOKE ALL ON ldp_collections, ldp_clients, ldp_reports FROM PUBLIC, dpq_scan;
