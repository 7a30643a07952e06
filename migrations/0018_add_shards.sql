-- Shard servers (docs/scaling.md, "Shard servers"; docs/decisions.md, "Shard servers"): the
-- PostgreSQL servers that will hold the partitions of a dataset's raw rows, reached from this
-- database (the coordinator) through postgres_fdw. This table is the registry dpqctl shard
-- add | list | remove keeps; each live row has, on the coordinator, a foreign server
-- dpq_shard_<name>, user mappings for dpqd's login role and for dpq_scan, and the foreign table
-- dpq_shards.health_<name> on the shard's dpq_shard.health view (store/shard_store.h).
-- The password is never stored here: it lives only in the user mappings (pg_user_mapping, which
-- only superusers and the mapping's own user can read).
-- Forward-only: never edit once merged.

CREATE TABLE shards (
  id                 bigserial PRIMARY KEY,
  name               text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{0,39}$'),
  host               text NOT NULL,
  port               integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
  dbname             text NOT NULL,
  username           text NOT NULL,
  -- The shard's server_version_num when it was added (at least 150000).
  server_version_num integer NOT NULL CHECK (server_version_num >= 150000),
  added_at           timestamptz NOT NULL DEFAULT now(),
  removed_at         timestamptz
);
-- A removed shard's row stays (the admin log names it); its name may be used again.
CREATE UNIQUE INDEX shards_live_name ON shards (name) WHERE removed_at IS NULL;

-- The foreign tables of the shards' health views. dpq_scan may look into the schema, and read a
-- table there only when granted (ShardStore::Add grants each health table, which holds nothing but
-- the shard's version number, so that it can check the mapping scans will use).
CREATE SCHEMA dpq_shards;
GRANT USAGE ON SCHEMA dpq_shards TO dpq_scan;

-- One probe of a shard's health table, as ShardStore::Probe runs it through the coordinator: the
-- shard's version number, or the SQLSTATE and message of the error reading it raised. The error is
-- caught here (a subtransaction) so that its SQLSTATE reaches dpqd: libpqxx turns a connection
-- failure's class 08 into an exception that no longer carries it. A statement_timeout
-- (query_canceled) is not caught by WHEN OTHERS: it still ends the statement.
CREATE FUNCTION dpq_shards.probe(shard text, OUT version_num integer, OUT error_state text,
                                 OUT error_message text)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT version_num FROM dpq_shards.%I', 'health_' || shard) INTO version_num;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS error_state = RETURNED_SQLSTATE, error_message = MESSAGE_TEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION dpq_shards.probe(text) FROM PUBLIC;
