#!/usr/bin/python3
"""End-to-end: time blocks (per-block budgets) through dpqctl and dpqd.

Block composition (Lécuyer et al., "Privacy Accounting and Quality Control in the Sage
Differentially Private ML Platform", SOSP 2019): a dataset's rows are split into calendar blocks of
a date column, each block has its own budget, and a query pays exactly the blocks its WHERE range
selects (every block up to the current one when it selects none), reading only those blocks.

Checked here through the real CLI on a real dpqd:
  - answers at epsilon 1e6 equal PostgreSQL's exact counts over the paid blocks (rows clamped
    into the declared bounds; rows in blocks that have not started and NULL dates never read);
  - `budget show --blocks` (text and --json): a query pays exactly its blocks, a block that does
    not fit refuses the whole query naming it, charging nothing; a block's own budget;
  - an analyst's cap limits each block, not all blocks together;
  - a rolling daily dashboard (a 7-day window per simulated day, 60 days) keeps answering on a
    per-block budget, while the same workload on one budget for all time is refused from query N,
    N computed from the budget and the per-query epsilon;
  - what cannot be done is refused before any charge, with a message that says what to do.
"""

import datetime
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402

BOUNDS = ("2026-01-01", "2030-12-31")  # the upper end is years ahead: its blocks have not started
FIRST_DATA_DAY = datetime.date(2026, 7, 1)
DATA_DAYS = 92  # July to September 2026: every block long started
FUTURE_DAY = "2030-06-01"
CLAMPED = ("SELECT pid, CASE WHEN day IS NULL THEN NULL ELSE least(greatest(day, date '%s'), "
           "date '%s') END AS day, amount FROM truth.visits" % BOUNDS)
K = 3  # rows per person at most, and kept per person: exact answers involve no bounding choice


def write_visits(path):
    rng = random.Random(28)
    lines = ["pid,day,amount"]
    for pid in range(1, 401):
        for _ in range(rng.randint(1, K)):
            day = str(FIRST_DATA_DAY + datetime.timedelta(rng.randrange(DATA_DAYS)))
            lines.append("%d,%s,%d" % (pid, day, rng.randint(0, 50)))
    # Clamped into the first block; in a block that has not started; in no block at all.
    lines += ["401,2025-06-01,5", "402,%s,7" % FUTURE_DAY, "403,,9", "404,9999-12-31,1"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def day(offset):
    return str(FIRST_DATA_DAY + datetime.timedelta(offset))


@sql_support.needs_psql
class TimeBlocksTest(harness.DpqdTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        tmp = cls.make_class_temp_dir()
        cls.csv = os.path.join(tmp, "visits.csv")
        write_visits(cls.csv)
        sql_support.psql(cls.dpqd, "CREATE SCHEMA IF NOT EXISTS truth")
        sql_support.psql(cls.dpqd, "CREATE TABLE truth.visits (pid integer, day date, "
                                   "amount integer)")
        sql_support.psql(cls.dpqd, "\\copy truth.visits FROM '%s' WITH (FORMAT csv, HEADER true)"
                         % cls.csv)

    def create(self, name, *extra, check=True):
        return self.dpqd.ctl("dataset", "create", name, "--csv", self.csv, "--privacy-unit", "pid",
                             "--type", "pid=integer", "--type", "day=date", "--type",
                             "amount=integer", "--bounds", "day=%s:%s" % BOUNDS, "--bounds",
                             "amount=0:50", *extra, check=check)

    def blocked(self, name, per_block_epsilon, width="day"):
        self.create(name, "--block-by", "day", "--block-width", width)
        self.dpqd.ctl("budget", "set", name, "--epsilon", per_block_epsilon, "--per-block")

    def count(self, dataset, epsilon, where=None, check=True):
        args = ["query", dataset, "--aggregate", "count", "--epsilon", epsilon,
                "--max-contributions", K]
        if where:
            args += ["--where", where]
        return self.dpqd.ctl(*args, check=check)

    def blocks(self, dataset):
        return {b["start"]: b for b in self.dpqd.ctl("budget", "show", dataset, "--blocks")["blocks"]}

    def truth(self, where):
        return int(sql_support.truth_rows(
            self.dpqd, "SELECT count(*) FROM (%s) v WHERE %s" % (CLAMPED, where))[0][0])

    def assert_exact(self, doc, truth):
        # epsilon 1e6, sensitivity K: Laplace scale 3e-6; 10 interval widths + 1e-3 leave the
        # truth out with probability below exp(-60).
        slack = 10 * (doc["interval"]["upper"] - doc["interval"]["lower"]) + 1e-3
        self.assertLessEqual(abs(doc["value"] - truth), slack, (doc, truth))

    def test_answers_read_exactly_the_paid_blocks(self):
        self.blocked("exact", 9e6)
        for where, truth_where in (
                ("day >= '%s' AND day <= '%s'" % (day(30), day(36)),
                 "day BETWEEN '%s' AND '%s'" % (day(30), day(36))),
                ("day BETWEEN '%s' AND '%s' AND amount > 20" % (day(0), day(13)),
                 "day BETWEEN '%s' AND '%s' AND amount > 20" % (day(0), day(13))),
                # The first block holds the row dated before the bounds (clamped into it).
                ("day < '2026-01-02'", "day = date '2026-01-01'"),
                # No range: every block up to today; never the future row, never a NULL date.
                (None, "day <= current_date")):
            with self.subTest(where=where):
                truth = self.truth(truth_where)
                self.assertGreater(truth, 0)
                self.assert_exact(self.count("exact", 1e6, where), truth)
        # DP SQL pays and reads the same way: DATE literals bound the block column.
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6, "
                     "max_groups_contributed = 1) COUNT(*, contribution_bounds_per_group => "
                     "(0, %d)) AS n FROM exact WHERE day BETWEEN DATE '%s' AND DATE '%s'"
                     % (K, day(40), day(46)))
        doc = self.dpqd.ctl("sql", statement)
        self.assertEqual(doc["rows"][0][0],
                         self.truth("day BETWEEN '%s' AND '%s'" % (day(40), day(46))))
        self.assertEqual(self.dpqd.ctl("audit", "exact")["entries"][-1]["blocks"],
                         "day:%s:%s" % (day(40), day(46)))
        # The future rows (one dated in 2030, one in 9999 read as 2030-12-31) and the NULL row
        # exist, and are outside every answer above.
        self.assertEqual(self.truth("day > current_date"), 2)
        self.assertEqual(int(sql_support.truth_rows(
            self.dpqd, "SELECT count(*) FROM truth.visits WHERE day IS NULL")[0][0]), 1)
        # Weekly groups over one month: every week of the range, each exact.
        doc = self.dpqd.ctl("query", "exact", "--aggregate", "count", "--epsilon", 1e6,
                            "--max-contributions", K, "--max-partitions", K, "--group-by",
                            "day:week", "--where", "day BETWEEN '2026-08-03' AND '2026-08-30'")
        truth = dict(sql_support.truth_rows(self.dpqd, (
            "SELECT to_char(date_trunc('week', day::timestamp), 'YYYY-MM-DD'), count(*) FROM (%s) v "
            "WHERE day BETWEEN '2026-08-03' AND '2026-08-30' GROUP BY 1") % CLAMPED))
        got = {r["key"][0]: r for r in doc["rows"] if r["key"][0] in truth}
        self.assertEqual(set(got), {"2026-08-03", "2026-08-10", "2026-08-17", "2026-08-24"})
        for key, r in got.items():
            self.assert_exact(r, int(truth[key]))

    def test_a_query_pays_exactly_its_blocks_or_is_refused_naming_one(self):
        self.blocked("paid", 1)
        window = "day BETWEEN '%s' AND '%s'" % (day(10), day(16))
        first = self.count("paid", 0.5, window)
        self.assertAlmostEqual(first["epsilon"], 0.5)
        blocks = self.blocks("paid")
        spent = {k for k, b in blocks.items() if b["epsilon_spent"] > 0}
        self.assertEqual(spent, {day(i) for i in range(10, 17)})
        for k in spent:
            self.assertAlmostEqual(blocks[k]["epsilon_remaining"], 0.5)
        self.assertEqual(list(blocks), sorted(blocks))
        self.assertEqual(list(blocks)[0], BOUNDS[0])
        audit = self.dpqd.ctl("audit", "paid")["entries"]
        self.assertEqual(audit[-1]["blocks"], "day:%s:%s" % (day(10), day(16)))
        # A window overlapping it: 0.6 does not fit days 10..16, so the whole query is refused,
        # naming the first block that does not fit, and no block is charged.
        before = self.blocks("paid")
        r = self.count("paid", 0.6, "day BETWEEN '%s' AND '%s'" % (day(5), day(12)), check=False)
        self.assert_error(r, "RESOURCE_EXHAUSTED", ["time block %s" % day(10), "paid"])
        self.assertEqual(self.blocks("paid"), before)
        # A fresh block has its full budget.
        self.assertAlmostEqual(self.count("paid", 1, "day = '%s'" % day(20))["epsilon"], 1)
        # One block's own budget: raised, it fits again; shown as its own.
        self.dpqd.ctl("budget", "set", "paid", "--epsilon", 2, "--block", day(10))
        shown = self.blocks("paid")[day(10)]
        self.assertEqual((shown["epsilon_total"], shown["own_budget"]), (2, True))
        text = self.dpqd.ctl_text("budget", "show", "paid", "--blocks")
        self.assertIn("per time block", text)
        self.assertRegex(text, r"\n%s +2\.0 +0\.5 +1\.5 .* own\n" % day(10))
        # The last N blocks, up to the current one (today: the bounds run years ahead).
        utc_today = lambda: datetime.datetime.now(datetime.timezone.utc).date()  # noqa: E731
        before = utc_today()
        last = [b["start"] for b in self.dpqd.ctl("budget", "show", "paid", "--last", 3)["blocks"]]
        every = self.blocks("paid")
        today = datetime.date.fromisoformat(last[-1])
        self.assertIn(today, (before, utc_today()))  # the same day, unless midnight passed
        self.assertEqual(last, [str(today - datetime.timedelta(i)) for i in (2, 1, 0)])
        self.assertEqual(list(every)[-3:], last)
        self.assertTrue(self.dpqd.ctl("audit", "verify", "paid", "--full")["ok"])

    def test_an_analysts_cap_limits_each_block(self):
        """A cap of 0.5 on a per-block budget of 1: per block, not over all blocks together."""
        self.blocked("capped", 1)
        token = self.create_analyst(self.dpqd, "carol")
        self.dpqd.ctl("grant", "carol", "capped", "--epsilon-cap", 0.5)

        def ask(epsilon, where):
            return self.dpqd.ctl("query", "capped", "--aggregate", "count", "--epsilon", epsilon,
                                 "--max-contributions", K, "--where", where, token=token,
                                 check=False)
        for d in (10, 11, 12):  # 1.5 over three blocks: three times the cap, 0.5 in each
            self.assertEqual(ask(0.5, "day = '%s'" % day(d)).returncode, 0)
        before = (self.snapshot(self.dpqd, "capped"), self.blocks("capped"))
        self.assert_error(ask(0.25, "day BETWEEN '%s' AND '%s'" % (day(9), day(10))),
                          "RESOURCE_EXHAUSTED",
                          ["carol's cap on time block %s" % day(10), "ask about other blocks"])
        self.assertEqual((self.snapshot(self.dpqd, "capped"), self.blocks("capped")), before)
        self.assertEqual(ask(0.5, "day = '%s'" % day(9)).returncode, 0)
        # What counts against the cap is the fullest block's spend: 0.5, not 2.0.
        grant = self.dpqd.ctl("grant", "list", "capped")["grants"][0]
        self.assertAlmostEqual(grant["epsilon_spent"], 0.5)
        self.assert_error(self.dpqd.ctl("grant", "carol", "capped", "--epsilon-cap", 0.4,
                                        check=False),
                          "FAILED_PRECONDITION", ["the block where the analyst spent most"])
        self.assertTrue(self.dpqd.ctl("audit", "verify", "capped", "--full")["ok"])

    def test_a_rolling_daily_dashboard_keeps_answering_on_time_blocks(self):
        """60 simulated days; on day d the dashboard asks for the last 7 days [d-6, d]."""
        per_block, epsilon, days = 1.0, 0.1, 60
        self.blocked("rolling", per_block)
        self.create("rolling_once")
        self.dpqd.ctl("budget", "set", "rolling_once", "--epsilon", per_block)
        # One budget for all time pays every query: it is spent after floor(B / e) queries, so
        # query N = floor(B / e) + 1 is the first refused (exact: the ledger counts in 1e-12 units).
        n = int(round(per_block * 1e12)) // int(round(epsilon * 1e12)) + 1
        self.assertEqual(n, 11)
        answered = {"rolling": 0, "rolling_once": 0}
        first_refused = {}
        for d in range(6, 6 + days):
            window = "day >= '%s' AND day <= '%s'" % (day(d - 6), day(d))
            for name in answered:
                r = self.count(name, epsilon, window, check=False)
                if r.returncode == 0:
                    answered[name] += 1
                else:
                    self.assert_error(r, "RESOURCE_EXHAUSTED")
                    first_refused.setdefault(name, d - 5)
        self.assertEqual(answered["rolling"], days)
        self.assertNotIn("rolling", first_refused)
        self.assertEqual(first_refused["rolling_once"], n)
        self.assertEqual(answered["rolling_once"], n - 1)
        # Each block was paid by the (at most 7) windows holding it: 0.7 of its 1.0 at most.
        spent = [b["epsilon_spent"] for b in self.blocks("rolling").values()]
        self.assertAlmostEqual(max(spent), 7 * epsilon)
        self.assertEqual(sum(1 for s in spent if s > 0), days + 6)
        print("rolling dashboard, %d days, epsilon %g per query: per-block budget %g answered "
              "%d/%d (most spent by a block: %g); one budget %g answered %d/%d, refused from "
              "query %d" % (days, epsilon, per_block, answered["rolling"], days, max(spent),
                            per_block, answered["rolling_once"], days, first_refused["rolling_once"]))

    def test_what_cannot_be_paid_per_block_is_refused_before_any_charge(self):
        self.blocked("refuse", 1, width="week")
        self.count("refuse", 0.1, "day BETWEEN '2026-08-03' AND '2026-08-09'")
        before = (self.snapshot(self.dpqd, "refuse"), self.blocks("refuse"))
        self.dpqd.ctl("population", "create", "other", "--unit-type", "integer")
        for args, code, words in (
                (["query", "refuse", "--aggregate", "count", "--epsilon", 0.1, "--where",
                  "day > '%s'" % FUTURE_DAY], "INVALID_ARGUMENT",
                 ["no time block that has started"]),
                (["budget", "set", "refuse", "--epsilon", 3], "FAILED_PRECONDITION",
                 ["per time block", "--per-block"]),
                (["budget", "set", "refuse", "--epsilon", 3, "--block", "2026-08-05"],
                 "INVALID_ARGUMENT", ["does not start a time block", "2026-08-03"]),
                (["sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) "
                  "FROM refuse a JOIN refuse b USING (pid)"], "UNIMPLEMENTED",
                 ["time block", "one dataset at a time"])):
            with self.subTest(args=args[:2]):
                self.assert_error(self.dpqd.ctl(*args, check=False), code, words)
        self.assertEqual((self.snapshot(self.dpqd, "refuse"), self.blocks("refuse")), before)
        # Creating datasets: a non-date column; another width in the same population.
        self.assert_error(self.create("bad_col", "--block-by", "amount", "--block-width", "day",
                                      check=False), "INVALID_ARGUMENT", ["amount", "date"])
        self.create("weekly", "--population", "other", "--block-by", "day", "--block-width",
                    "week")
        self.assert_error(self.create("daily", "--population", "other", "--block-by", "day",
                                      "--block-width", "day", check=False),
                          "INVALID_ARGUMENT", ["week"])
        self.dpqd.ctl("budget", "set", "other", "--epsilon", 1, "--per-block")
        self.assert_error(self.create("unblocked", "--population", "other", check=False),
                          "FAILED_PRECONDITION", ["--block-by"])
        # One budget that was spent cannot become per block (the spend covers every block).
        self.create("spent_once", "--block-by", "day", "--block-width", "day")
        self.dpqd.ctl("budget", "set", "spent_once", "--epsilon", 1)
        self.count("spent_once", 0.1)
        self.assert_error(self.dpqd.ctl("budget", "set", "spent_once", "--epsilon", 1,
                                        "--per-block", check=False),
                          "FAILED_PRECONDITION", ["before its first charge"])

    def test_the_promise_is_stated_where_the_admin_decides(self):
        self.blocked("promised", 1)
        shown = self.dpqd.ctl("dataset", "show", "promised")
        self.assertEqual((shown["block_by"], shown["block_width"], shown["per_block_budget"]),
                         ("day", "day", True))
        self.assertIn("within one day are protected by that block's budget", shown["promise"])
        self.assertIn("sum of those blocks' spend", shown["promise"])
        self.create("once")
        self.assertIn("one budget for all time", self.dpqd.ctl("dataset", "show", "once")["promise"])
        text = self.dpqd.ctl_text("dataset", "show", "promised")
        self.assertIn("time blocks:   one day of day each", text)
        self.assertTrue(all(len(line) <= 96 for line in text.splitlines()), text)


if __name__ == "__main__":
    unittest.main()
