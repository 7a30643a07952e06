-- dpq schema, version 1: datasets, principals and grants, budget ledgers, the append-only audit chain.
-- Forward-only: never edit once merged; add NNNN_verb_noun.sql instead.

-- Raw rows live in their own schema, one table per dataset named ds_<id> (never from user input).
CREATE SCHEMA dpq_data;

CREATE TABLE datasets (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
  privacy_unit  text NOT NULL,
  version       bigint NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE dataset_columns (
  dataset_id  bigint NOT NULL REFERENCES datasets(id),
  position    int NOT NULL,
  name        text NOT NULL CHECK (name ~ '^[a-z_][a-z0-9_]{0,62}$'),
  type        text NOT NULL CHECK (type IN ('integer', 'double', 'text')),
  lower_bound double precision,
  upper_bound double precision,
  PRIMARY KEY (dataset_id, position),
  UNIQUE (dataset_id, name),
  CHECK ((lower_bound IS NULL) = (upper_bound IS NULL)),
  CHECK (lower_bound IS NULL OR (type <> 'text' AND lower_bound < upper_bound))
);

-- Admins and analysts. Only the SHA-256 of a token is stored.
CREATE TABLE principals (
  id            bigserial PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  role          text NOT NULL CHECK (role IN ('admin', 'analyst')),
  token_sha256  bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE grants (
  principal_id  bigint NOT NULL REFERENCES principals(id),
  dataset_id    bigint NOT NULL REFERENCES datasets(id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal_id, dataset_id)
);

-- One row per dataset: the privacy filter's state. Locked (SELECT ... FOR UPDATE) for each debit.
-- Budgets are exact integers: epsilon in units of 1e-12, delta in units of 1e-18
-- (server/query/privacy_units.h), so decimal budgets add up exactly.
-- audit_head_* let a debit extend the hash chain without reading the audit table: O(1) per debit.
CREATE TABLE ledgers (
  dataset_id             bigint PRIMARY KEY REFERENCES datasets(id),
  accountant             text NOT NULL DEFAULT 'basic',
  epsilon_total_units    bigint NOT NULL DEFAULT 0 CHECK (epsilon_total_units >= 0),
  delta_total_units      bigint NOT NULL DEFAULT 0
                         CHECK (delta_total_units >= 0 AND delta_total_units < 1000000000000000000),
  epsilon_spent_units    bigint NOT NULL DEFAULT 0 CHECK (epsilon_spent_units >= 0),
  delta_spent_units      bigint NOT NULL DEFAULT 0 CHECK (delta_spent_units >= 0),
  audit_head_seq   bigint NOT NULL DEFAULT 0,
  audit_head_hash  bytea NOT NULL DEFAULT '\x0000000000000000000000000000000000000000000000000000000000000000',
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Every allocation of privacy budget. Append-only (see trigger) and hash-chained per dataset:
-- hash = SHA-256(prev_hash || canonical content), computed by dpqd (server/store/audit_chain.cc).
CREATE TABLE audit (
  id                 bigserial PRIMARY KEY,
  dataset_id         bigint NOT NULL REFERENCES datasets(id),
  seq                bigint NOT NULL,
  request_id         text NOT NULL,
  principal_id       bigint NOT NULL REFERENCES principals(id),
  analyst            text NOT NULL,
  created_at         timestamptz NOT NULL DEFAULT now(),
  fingerprint        text NOT NULL,
  aggregate          text NOT NULL,
  column_name        text NOT NULL,
  mechanism          text NOT NULL,
  epsilon_units      bigint NOT NULL CHECK (epsilon_units > 0),
  delta_units        bigint NOT NULL CHECK (delta_units >= 0),
  sensitivity        double precision NOT NULL,
  noise_scale        double precision NOT NULL,
  count_noise_scale  double precision NOT NULL,
  value              double precision NOT NULL,
  confidence         double precision NOT NULL,
  ci_lower           double precision NOT NULL,
  ci_upper           double precision NOT NULL,
  clamp_lower        double precision,
  clamp_upper        double precision,
  max_contributions  int NOT NULL,
  prev_hash          bytea NOT NULL,
  hash               bytea NOT NULL,
  UNIQUE (dataset_id, seq),
  UNIQUE (dataset_id, request_id)
);

CREATE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_append_only
  BEFORE UPDATE OR DELETE ON audit
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();

CREATE TRIGGER audit_no_truncate
  BEFORE TRUNCATE ON audit
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
