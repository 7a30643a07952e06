-- Least privilege for the statements that read raw rows (docs/database-roles.md).
-- Aggregate scans run in READ ONLY transactions under `dpq_scan` (SET LOCAL ROLE), a role that may
-- read the dataset tables in dpq_data and nothing else: no ledger, audit, principal or grant row,
-- neither to read nor to write. Only dpqd's own login role (the owner of every table) debits.
-- Roles belong to the cluster, not the database: create it once, keep it NOLOGIN.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dpq_scan') THEN
    CREATE ROLE dpq_scan NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE EXCEPTION 'dpq needs the role dpq_scan: run CREATE ROLE dpq_scan NOLOGIN as a superuser, '
                  'or give dpqd''s database user CREATEROLE';
END
$$;
-- dpqd's login role must be able to SET ROLE dpq_scan (a superuser always can).
DO $$
BEGIN
  IF NOT pg_has_role(current_user, 'dpq_scan', 'MEMBER') THEN
    EXECUTE format('GRANT dpq_scan TO %I', current_user);
  END IF;
END
$$;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM dpq_scan;
GRANT USAGE ON SCHEMA dpq_data TO dpq_scan;
GRANT SELECT ON ALL TABLES IN SCHEMA dpq_data TO dpq_scan;
-- Dataset tables created later by this role (dpqd's) are readable by dpq_scan too.
ALTER DEFAULT PRIVILEGES IN SCHEMA dpq_data GRANT SELECT ON TABLES TO dpq_scan;

-- The largest epsilon one query may ask of a dataset (a budget setting; NULL: no limit beyond the
-- budget itself). Checked before anything is charged.
ALTER TABLE ledgers ADD COLUMN max_query_epsilon_units bigint
  CHECK (max_query_epsilon_units IS NULL OR max_query_epsilon_units > 0);
