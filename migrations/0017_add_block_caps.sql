-- Analyst caps per time block (docs/decisions.md, "Time blocks"): on a population whose budget is
-- per block (ledgers.per_block), an analyst's cap (population_caps.epsilon_cap_units /
-- delta_cap_units) limits what the analyst spends in each block, as the block's budget limits
-- everyone's: block composition (Lécuyer et al., SOSP 2019) applied to the analyst's own share.
-- population_caps.*_spent_units keeps adding every charge (all blocks together, informative); a
-- charge must fit the cap in every block it pays. Forward-only: never edit once merged.

-- One row per analyst and block the analyst was charged in. Written only under the population's
-- ledger row lock and the analyst's population_caps row lock (the debit takes both first), and
-- locked in (principal, block) order.
CREATE TABLE block_caps (
  population_id        bigint NOT NULL REFERENCES populations(id),
  principal_id         bigint NOT NULL REFERENCES principals(id),
  block_start          date NOT NULL,
  epsilon_spent_units  bigint NOT NULL DEFAULT 0 CHECK (epsilon_spent_units >= 0),
  delta_spent_units    bigint NOT NULL DEFAULT 0 CHECK (delta_spent_units >= 0),
  PRIMARY KEY (population_id, principal_id, block_start)
);

-- What counts against each analyst's cap: the spend on the population, or on a per-block
-- population the most the analyst spent in any one block (epsilon and delta each). A cap may not
-- go below it; the grant listing and the cap metrics show it.
CREATE VIEW cap_spend AS
SELECT g.population_id, g.principal_id,
       CASE WHEN l.per_block THEN coalesce(b.epsilon_spent_units, 0)
            ELSE g.epsilon_spent_units END AS epsilon_spent_units,
       CASE WHEN l.per_block THEN coalesce(b.delta_spent_units, 0)
            ELSE g.delta_spent_units END AS delta_spent_units
FROM population_caps g
JOIN ledgers l ON l.population_id = g.population_id
LEFT JOIN LATERAL (
  SELECT max(c.epsilon_spent_units) AS epsilon_spent_units,
         max(c.delta_spent_units) AS delta_spent_units
  FROM block_caps c
  WHERE c.population_id = g.population_id AND c.principal_id = g.principal_id
) b ON true;
