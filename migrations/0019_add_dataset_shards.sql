-- Sharded datasets (docs/scaling.md, "Sharded datasets"): a dataset created with --shards keeps its
-- raw rows on shard servers (migration 0018). On the coordinator its table dpq_data.ds_<id> is
-- PARTITION BY HASH (privacy unit), with one foreign partition dpq_data.ds_<id>_<shard> per shard,
-- so that all rows of one person sit on one shard. This table records which shard holds which
-- hash partition: `position` is the partition's remainder modulo the number of shards.
--
-- Loads are atomic without two-phase commit (PostgreSQL 15's postgres_fdw has none): every row of
-- a sharded table carries _dpq_load, the dataset version its load committed, and scans read only
-- rows with _dpq_load <= the version they were planned on. Rows a failed load left on a shard that
-- committed before another failed carry a version the coordinator never committed: invisible, and
-- deleted by the next load before it writes (store/dataset_store.cc). datasets.version is bumped
-- only by loads and by a drop.
-- Forward-only: never edit once merged.

CREATE TABLE dataset_shards (
  dataset_id bigint NOT NULL REFERENCES datasets (id),
  position   integer NOT NULL CHECK (position >= 0),
  shard_id   bigint NOT NULL REFERENCES shards (id),
  PRIMARY KEY (dataset_id, position),
  UNIQUE (dataset_id, shard_id)
);
CREATE INDEX dataset_shards_by_shard ON dataset_shards (shard_id);
