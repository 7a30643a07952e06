-- The admin log: every admin action (dataset create, load, drop; analyst create, revoke,
-- token rotation; grant and grant revoke; budget set) in one append-only, hash-chained table,
-- written in the same transaction as the action, so no action commits without its row.
-- hash = SHA-256(prev_hash || canonical content) (server/store/audit_chain.cc); created_at is not
-- hashed (as in `audit`). Checked by `dpqctl audit verify --admin-log`.
-- Forward-only: never edit once merged.
CREATE TABLE admin_log (
  seq         bigint PRIMARY KEY CHECK (seq >= 1),
  created_at  timestamptz NOT NULL DEFAULT now(),
  admin       text NOT NULL,
  action      text NOT NULL,
  target      text NOT NULL,
  details     text NOT NULL,
  prev_hash   bytea NOT NULL CHECK (length(prev_hash) = 32),
  hash        bytea NOT NULL CHECK (length(hash) = 32)
);
CREATE TRIGGER admin_log_append_only
  BEFORE UPDATE OR DELETE ON admin_log
  FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
CREATE TRIGGER admin_log_no_truncate
  BEFORE TRUNCATE ON admin_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse_change();
