-- Selectable accountants: the ledger keeps the composed state of its accountant, and each
-- allocation records the privacy events it composed, so `audit verify` can recompute the ledger.
-- Forward-only: never edit once merged.

-- Serialized accountant state (server/dp/accounting/accountant.h); empty for "basic", whose state
-- is exactly the integer spent columns.
ALTER TABLE ledgers
  ADD COLUMN accountant_state text NOT NULL DEFAULT '',
  ADD CONSTRAINT ledgers_accountant_known CHECK (accountant IN ('basic', 'advanced', 'rdp', 'zcdp'));

-- The privacy events of an allocation as ';'-separated event specs
-- (server/dp/accounting/privacy_event.h), e.g. 'pure:epsilon=0.5' or
-- 'gaussian:sigma=12.5,sensitivity=1.0000009536743164'.
ALTER TABLE audit ADD COLUMN events text NOT NULL DEFAULT '';
