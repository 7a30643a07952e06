-- Admin lifecycle: revoking analysts and grants, rotating tokens, and when a token was
-- last used. Principals and grants are never deleted: audit rows reference them, and a grant's
-- spend against its cap must survive a revoke-and-grant-again.
-- Forward-only: never edit once merged.

-- A revoked principal's token no longer authenticates (checked on every request, so every dpqd of
-- the database sees it on the next request). last_used_at is written at most once a minute.
ALTER TABLE principals
  ADD COLUMN revoked_at timestamptz,
  ADD COLUMN last_used_at timestamptz;

-- A revoked grant gives no access; granting again clears revoked_at and keeps the spend.
ALTER TABLE grants ADD COLUMN revoked_at timestamptz;
