-- Contribution bounding by a stored rank, so that bounding costs nearly nothing at query time
-- (server/store/row_ranker.h, server/store/bounding_sql.h). Forward-only: never edit once merged.

-- Every dataset table created from now on has a hidden column `_dpq_rank integer NOT NULL`: the
-- row's position among its privacy unit's rows in load order (1, 2, ...), assigned by dpqd while it
-- streams the COPY. Tables created before have no such column, hence false for existing rows.
ALTER TABLE datasets ADD COLUMN has_row_rank boolean NOT NULL DEFAULT false;

-- Whether a load has put a NULL into the column. The stored rank counts every row, while the
-- random (window) choice drops NULL values first, so the scanner uses the rank only on columns
-- without NULLs. Unknown for existing datasets, hence the conservative true.
ALTER TABLE dataset_columns ADD COLUMN has_nulls boolean NOT NULL DEFAULT true;
