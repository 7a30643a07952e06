-- Date and timestamp columns (docs/decisions.md, "Dates and timestamps"). Their declared bounds
-- are required and kept as text in the column type's canonical form ('2026-01-01',
-- '2026-01-01T00:00:00Z'): a timestamp in microseconds does not fit a double exactly, so the
-- numeric lower_bound / upper_bound stay NULL for them.
-- Forward-only: never edit once merged.

ALTER TABLE dataset_columns DROP CONSTRAINT dataset_columns_type_check;
ALTER TABLE dataset_columns ADD CONSTRAINT dataset_columns_type_check
  CHECK (type IN ('integer', 'double', 'text', 'date', 'timestamp'));

ALTER TABLE dataset_columns
  ADD COLUMN lower_text text,
  ADD COLUMN upper_text text,
  ADD CONSTRAINT dataset_columns_calendar_bounds CHECK (
    (type IN ('date', 'timestamp')) = (lower_text IS NOT NULL AND upper_text IS NOT NULL)
    AND (lower_text IS NULL) = (upper_text IS NULL)
    AND (type NOT IN ('date', 'timestamp') OR lower_bound IS NULL));
