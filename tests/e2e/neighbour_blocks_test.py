#!/usr/bin/python3
"""End-to-end neighbour-differential suite for time blocks (the comparator, the views and the grid
runner are neighbour_compare.py's; the side's names and its grid runner neighbour_join_test.py's).

Per side a population P with a per-block budget (blocks of one day of `day`) holding D (~40 units,
rows spread over July-September 2026) and L (the same rows, bounds from 2000: a query without a
range would read more blocks than a query may). For D' one more person whose rows all fall in ONE
block (2026-08-10) or in none that has started: plain rows; wild values (out of bounds, NULL, 200
rows); rows dated in a future block (2030-06-01) and NULL dates. The same grid runs on each: flag
queries and DP SQL whose range holds the person's block, ranges that do not, no range, weekly
groups, filters on the value column, a batch, a replay and a cached repeat, --explain, refusals (a
range wholly in the future, a self-join, more than 3660 blocks, a block asked for more than it has
left); then every block's budget and spend, and the audit chain with its paid blocks. Everything
but the noisy values must be the same.

What this pins, honestly: the comparator sees only what is not noise, so it pins that WHICH blocks
a query pays, and so its charge, every block's spend, each refusal and its message, the plan and
the keys of weekly groups come from the query text and the declared schema alone. It cannot see
whether the scan read only the paid blocks: an unrestricted scan changes values, not observables.
That is pinned by test_the_scan_reads_no_row_outside_the_paid_blocks, which compares the released
values of a no-range count at epsilon 1e3 against a tolerance derived from the noise scale b: the
future-dated and NULL-dated person would move it by 3 = 1000 b if read; the tolerance is 40 b.
(Checked by hand: with the engine's restriction to the paid blocks switched off, the grid still
compares equal and this test fails, the future side's count 3.0 above D's.)
Every side reads the same "today" (the server's UTC date): a run across midnight UTC would see
one more block on the later sides.
"""

import datetime
import functools
import json
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from neighbour_compare import (  # noqa: E402
    AUDIT_FIELDS, Context, Step, batch_step, explain_step, query_step, run_grids, sql_step)
from neighbour_join_test import join_admin_step, run_join_grid, side_differences  # noqa: E402
from neighbour_test import (  # noqa: E402
    ADDED, BASE_UNITS, BUDGET_DELTA, EPS, MAX_SHOWN_DIFFERENCES, sql_query, with_privacy)

K = 3                       # rows per unit kept (every flag query declares it)
BLOCK_EPS = 1e5             # every block's budget: the grid spends at most ~3e4 of it on a block
BOUNDS = "day=2026-01-01:2030-12-31"
LONG_BOUNDS = "day=2000-01-01:2030-12-31"   # 2000 to today: well over 3660 blocks of a day
FIRST_DAY = datetime.date(2026, 7, 1)
DAYS = 92                   # July to September 2026: long started (today is the server's date)
BLOCK = "2026-08-10"        # the added person's one block
FUTURE = "2030-06-01"       # a block that has not started


def base_rows():
    """40 units, one to three rows each on days spread over July-September, amounts in bounds."""
    rng = random.Random(20261205)
    rows = []
    for pid in range(1, BASE_UNITS + 1):
        for _ in range(rng.randint(1, K)):
            rows.append([str(pid), str(FIRST_DAY + datetime.timedelta(rng.randrange(DAYS))),
                         repr(round(rng.uniform(0, 50), 2))])
    return rows


def _person(*rows):
    return [[str(ADDED)] + list(r) for r in rows]


# The added person's rows (day, amount).
VARIANTS = {
    "plain": _person((BLOCK, "12.5"), (BLOCK, "40")),
    # Out of bounds both ways, near DBL_MAX, NULL, and 200 rows: all on the one day.
    "wild": _person(*([(BLOCK, "1e6"), (BLOCK, "-5"), (BLOCK, ""), (BLOCK, "1e308")] +
                      [(BLOCK, repr(float(i % 51))) for i in range(196)])),
    # In no block that has started: nothing may change, not even (beyond noise) the values.
    "future": _person((FUTURE, "10"), (FUTURE, "50"), ("", "20")),
}

IN_AUG = "day BETWEEN '2026-08-01' AND '2026-08-31'"
IN_JULY = "day BETWEEN '2026-07-01' AND '2026-07-31'"
WEEKS = "day BETWEEN '2026-08-03' AND '2026-08-30'"


def q(aggregate, mechanism="laplace", **kw):
    return with_privacy(dict({"aggregate": aggregate, "max_contributions": K}, **kw), mechanism)


def flag_queries():
    """(role, query): ranges holding the person's block, ranges without it, no range, weekly and
    monthly groups, filters on the value column (inside a range, alone, in a top-level OR: every
    block), then the refusals."""
    return [
        ("D", q("count", where=IN_AUG)),
        ("D", q("sum", column="amount", where="day = '%s'" % BLOCK)),
        ("D", q("mean", "gaussian", column="amount", where="day >= '2026-08-10' AND day < "
                "'2026-08-11'")),
        ("D", q("quantile", column="amount", quantiles=[0.5], where=IN_AUG)),
        ("D", q("count", where=IN_JULY)),
        ("D", q("sum", column="amount", where="day >= '2026-09-01'")),
        ("D", q("count")),
        ("D", q("sum", "gaussian", column="amount")),
        ("D", q("count", group_by=["day:week"], max_partitions=K, where=WEEKS)),
        ("D", q("sum", column="amount", group_by=["day:month"], max_partitions=K)),
        ("D", q("count", where="amount > 20 AND day >= '2026-08-01'")),
        ("D", q("count", where="amount > 20")),
        ("D", q("sum", column="amount", where="day = '%s' OR amount > 40" % BLOCK)),
        ("D", q("sum", column="amount", per_unit=True, max_contributions=1, where=IN_AUG)),
        # Refused on every side, before any charge.
        ("D", q("count", where="day >= '%s'" % FUTURE)),
        ("L", q("count")),
    ]


FLAG_REFUSED = (14, 15)

D = "FROM {d}"


def sql_queries():
    return [
        sql_query("COUNT(*) AS n, SUM(amount) AS s %s WHERE day BETWEEN DATE '2026-08-01' AND "
                  "DATE '2026-08-31'" % D, ["n", "s"]),
        sql_query("COUNT(*) AS n %s WHERE day = DATE '%s'" % (D, BLOCK), ["n"]),
        sql_query("COUNT(*) AS n, AVG(amount) AS a %s WHERE day < DATE '2026-08-01'" % D, ["n"]),
        sql_query("COUNT(*) AS n, SUM(amount) AS s, AVG(amount) AS a " + D, ["n", "s"]),
        sql_query("DATE_TRUNC(day, WEEK) AS w, COUNT(*) AS n %s WHERE day BETWEEN DATE "
                  "'2026-08-03' AND DATE '2026-08-30' GROUP BY w" % D, ["n"],
                  extra=", max_groups_contributed = 3"),
        sql_query("DATE_TRUNC(day, MONTH) AS m, SUM(amount) AS s %s GROUP BY m" % D, ["s"],
                  extra=", max_groups_contributed = 3"),
        sql_query("SUM(amount) AS s %s WHERE amount > 20 AND day >= DATE '%s'" % (D, BLOCK), ["s"]),
        # Refused on every side, before any charge.
        sql_query("COUNT(*) AS n %s WHERE day >= DATE '%s'" % (D, FUTURE), ["n"]),
        sql_query("COUNT(*) AS n FROM {d} a JOIN {d} b USING (pid)", ["n"]),
        sql_query("COUNT(*) AS n " + D, ["n"]),  # on L: more than 3660 blocks
    ]


SQL_ON_L = 9
SQL_REFUSED = (7, 8, 9)
SQL_EXPLAINED = (0, 3, 4, 7, 9)
# More than the person's block has left (BLOCK_EPS less what the grid spent on it): refused with
# RESOURCE_EXHAUSTED naming that block, the same message on every side.
EXHAUST = with_privacy({"aggregate": "count", "max_contributions": K,
                        "where": "day BETWEEN '%s' AND '2026-08-12'" % BLOCK}, "laplace")
EXHAUST["epsilon"] = BLOCK_EPS


def on(role, step):
    """A step of neighbour_compare (which takes a dataset's name) run on the side's `role`."""
    return Step(step.label, lambda ctx, side: step.run(ctx, side[role]),
                lambda side: step.describe(side[role]))


def build_steps(batch_dir):
    steps = [join_admin_step("show " + r, lambda side, r=r: ("dataset", "show", side[r]),
                             ("created_at",)) for r in "DL"]
    flags = flag_queries()
    steps += [on(role, query_step(fq, "q-%02d" % i)) for i, (role, fq) in enumerate(flags)]
    # The same id replays; a new id is served from the cache (the range is in its fingerprint).
    steps += [on("D", query_step(flags[0][1], "q-00")), on("D", query_step(flags[0][1], "again"))]
    batch = [q("count", where=IN_JULY), q("sum", column="amount", where="day = '%s'" % BLOCK)]
    path = os.path.join(batch_dir, "batch.json")
    with open(path, "w") as f:
        json.dump(batch, f)
    steps.append(on("D", batch_step(batch, None, path, "b-00")))
    sqls = sql_queries()
    steps += [on("L" if i == SQL_ON_L else "D", sql_step(s, "s-%02d" % i))
              for i, s in enumerate(sqls)]
    steps += [on("L" if i == SQL_ON_L else "D", explain_step(sqls[i], i)) for i in SQL_EXPLAINED]
    steps.append(on("D", query_step(EXHAUST, "exhaust")))
    steps += [join_admin_step("budget blocks", lambda side: ("budget", "show", side["D"],
                                                             "--blocks")),
              join_admin_step("budget", lambda side: ("budget", "show", side["P"]))]
    return steps


def side_names(index):
    """Of one length on every side, so that positions in refusals are comparable."""
    return {"P": "tbp_%d" % index, "D": "tbd_%d" % index, "L": "tbl_%d" % index}


class BlocksNeighbourTest(harness.DpqdTestCase):
    """D against D' = D plus one person inside one block (or in none that has started): charges,
    paid blocks, refusals, plans, every block's spend and the audit must be the same."""

    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.dpqd = cls.new_class_dpqd()
        cls.dir = cls.make_class_temp_dir()
        tokens = {"alice": cls.create_analyst(cls.dpqd, "alice")}
        base = base_rows()
        cls.sides = {v: side_names(i) for i, v in enumerate(["base"] + list(VARIANTS))}
        for variant, side in cls.sides.items():
            path = os.path.join(cls.dir, side["D"] + ".csv")
            rows = base + (VARIANTS[variant] if variant != "base" else [])
            with open(path, "w") as f:
                f.write("pid,day,amount\n" + "".join(",".join(r) + "\n" for r in rows))
            cls.dpqd.ctl("population", "create", side["P"], "--unit-type", "integer")
            for role, bounds in (("D", BOUNDS), ("L", LONG_BOUNDS)):
                cls.dpqd.ctl("dataset", "create", side[role], "--csv", path, "--population",
                             side["P"], "--privacy-unit", "pid", "--type", "pid=integer", "--type",
                             "day=date", "--type", "amount=double", "--bounds", bounds,
                             "--bounds", "amount=0:50", "--block-by", "day", "--block-width",
                             "day")
                cls.dpqd.ctl("grant", "alice", side[role])
            cls.dpqd.ctl("budget", "set", side["P"], "--epsilon", BLOCK_EPS, "--delta",
                         BUDGET_DELTA, "--per-block")
        cls.steps = build_steps(cls.dir)
        cls.ctx = Context(cls.dpqd, tokens)
        cls.addClassCleanup(cls.ctx.close)
        grid = functools.partial(run_join_grid, audit_fields=AUDIT_FIELDS + ("blocks",))
        cls.results, cls.grid_errors = run_grids(grid, cls.ctx, cls.sides, cls.steps)
        sys.stderr.write("[neighbour blocks] %d sides x %d requests in %.0f s\n" % (
            len(cls.sides), len(cls.steps), time.monotonic() - started))

    def _results(self, variant):
        if variant in self.grid_errors:
            raise self.grid_errors[variant]
        return self.results[variant]

    def compare_with_base(self, variant):
        audit = self._results(variant)[1]
        found = side_differences(self.steps, self.sides[variant], self._results("base"),
                                 self._results(variant))
        sys.stderr.write("[neighbour blocks] %s: %d requests, %d audit rows, %d differences\n" % (
            variant, len(self.steps), len(audit), len(found)))
        if found:
            self.fail("%d observable(s) differ between D and D' (%s: D + one person in one "
                      "block):\n%s" % (len(found), variant,
                                       "\n".join(found[:MAX_SHOWN_DIFFERENCES])))

    def test_blocks_neighbour_plain_person_in_one_block(self):
        self.compare_with_base("plain")

    def test_blocks_neighbour_wild_values_and_many_rows_in_one_block(self):
        self.compare_with_base("wild")

    def test_blocks_neighbour_person_only_in_a_future_block_and_null_dates(self):
        self.compare_with_base("future")

    def test_blocks_grid_answers_refusals_and_paid_blocks(self):
        """On D what should answer answers and the refusals are refused (charging nothing); the
        audit records each query's blocks; the exhausted block is named; the grid really spent
        the person's block (so the comparison of the blocks' spend is not of empty ledgers)."""
        views, audit = self._results("base")
        by_label = {s.label: v for s, v in zip(self.steps, views)}
        wrong = ["q-%02d" % i for i in range(len(flag_queries()))
                 if (by_label["query q-%02d" % i]["exit"] == 0) == (i in FLAG_REFUSED)]
        wrong += ["s-%02d" % i for i in range(len(sql_queries()))
                  if (by_label["sql s-%02d" % i]["exit"] == 0) == (i in SQL_REFUSED)]
        self.assertEqual(wrong, [], {k: by_label.get("query " + k, by_label.get("sql " + k))
                                     for k in wrong})
        self.assertIn("leaves no time block that has started",
                      by_label["query q-14"]["error.message"])
        self.assertIn("at most 3660 per query", by_label["query q-15"]["error.message"])
        self.assertIn("at most 3660 per query", by_label["sql s-09"]["error.message"])
        self.assertEqual(by_label["sql s-08"]["error.code"], "UNIMPLEMENTED")
        exhausted = by_label["query exhaust"]
        self.assertEqual(exhausted["error.code"], "RESOURCE_EXHAUSTED")
        self.assertIn("time block %s" % BLOCK, exhausted["error.message"])
        blocks = {e["request_id"]: e["blocks"] for e in audit}
        refused = {"q-%02d" % i for i in FLAG_REFUSED} | {"s-%02d" % i for i in SQL_REFUSED}
        self.assertFalse(refused & set(blocks) or "exhaust" in blocks)
        self.assertNotIn("again", blocks)
        self.assertEqual(blocks["q-00"], "day:2026-08-01:2026-08-31")
        self.assertEqual(blocks["q-04"], "day:2026-07-01:2026-07-31")
        self.assertEqual(blocks["s-01"], "day:%s:%s" % (BLOCK, BLOCK))
        self.assertEqual(blocks["b-00"], "day:2026-07-01:%s" % BLOCK)  # the hull of the batch
        self.assertTrue(blocks["q-06"].startswith("day:2026-01-01:"), blocks["q-06"])
        self.assertTrue(blocks["q-12"].startswith("day:2026-01-01:"), blocks["q-12"])
        cells = {k: v for k, v in by_label["budget blocks"].items()
                 if k.startswith("blocks.[")}
        spent = [v for k, v in cells.items() if k.endswith(".epsilon_spent")]
        self.assertGreater(max(spent), 10 * EPS)

    def test_the_scan_reads_no_row_outside_the_paid_blocks(self):
        """A no-range count at epsilon 1e3 (Laplace scale b = K / 1e3) on D, on the future-dated
        D' and on the plain D'. Each released value is within 20 b of its truth but with
        probability 2 exp(-20) < 5e-9, so two sides within 40 b of their truths' difference. The
        future person's 3 rows (2030-06-01 twice, a NULL date; K = 3 keeps all) would move the
        count by 3 = 1000 b if the scan read them; the plain person's 2 rows in 2026-08-10 must
        move it by 2 (the check has the power to see a difference)."""
        probe = with_privacy({"aggregate": "count", "max_contributions": K}, "laplace")
        values, scales = {}, set()
        for variant in ("base", "future", "plain"):
            doc = self.dpqd.ctl("query", self.sides[variant]["D"], "--aggregate", "count",
                                "--epsilon", probe["epsilon"], "--max-contributions", K,
                                "--request-id", "probe", token=self.ctx.tokens["alice"])
            values[variant] = doc["value"]
            scales.add(doc["noise_scale"])
        self.assertEqual(len(scales), 1)
        b = scales.pop()
        self.assertAlmostEqual(b, K / EPS)
        self.assertLessEqual(abs(values["future"] - values["base"]), 40 * b, values)
        self.assertLessEqual(abs(values["plain"] - values["base"] - 2), 40 * b, values)


if __name__ == "__main__":
    unittest.main()
