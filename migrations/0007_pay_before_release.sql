-- Pay before you look: a query is charged, and its audit row committed, before its scan
-- starts, so a scan that fails for any reason (statement timeout, client deadline, a database
-- error, dpqd killed) keeps its cost. The released values arrive after the scan, in `releases`,
-- one row per paid audit row at most, bound to it by hash.
-- Forward-only: never edit once merged.

-- Rows written since: charged before the scan; their released values are in `releases`. Covered by
-- the audit hash chain (server/store/audit_chain.cc); earlier rows carry their values inline.
ALTER TABLE audit ADD COLUMN release_deferred boolean NOT NULL DEFAULT false;

-- The noisy values a paid audit row released. hash = SHA-256(the audit row's hash || canonical
-- content) (server/store/audit_chain.cc), so `audit verify` detects an altered release; the primary
-- key makes a second release for one charge impossible (a retry of a charged but unanswered request
-- runs its scan again only while no release exists, and concurrent retries race for one row).
CREATE TABLE releases (
  dataset_id         bigint NOT NULL,
  seq                bigint NOT NULL,
  released_value     double precision NOT NULL,
  released_ci_lower  double precision NOT NULL,
  released_ci_upper  double precision NOT NULL,
  released_result    text NOT NULL,
  release_hash       bytea NOT NULL,
  released_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (dataset_id, seq),
  FOREIGN KEY (dataset_id, seq) REFERENCES audit (dataset_id, seq)
);
CREATE TRIGGER releases_append_only
  BEFORE UPDATE OR DELETE ON releases
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER releases_no_truncate
  BEFORE TRUNCATE ON releases
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();

-- Whether a load saw a NULL was a fact of the data that a plan once depended on (the bounding
-- method switched on it, so one person's NULL was observable). Plans now depend on declared facts
-- only; the column goes.
ALTER TABLE dataset_columns DROP COLUMN has_nulls;
