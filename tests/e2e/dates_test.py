#!/usr/bin/python3
"""End-to-end: date and timestamp columns through dpqctl and dpqd.

A generated CSV of visits (a date, a UTC timestamp, some cells outside the declared bounds and
some empty) is loaded as dpq datasets AND as a plain table of the same embedded PostgreSQL
(truth.visits). At epsilon 1e6 every --where count and every --group-by COLUMN:BUCKET count must
equal PostgreSQL's exact answer on the same rows clamped into the declared bounds, every bucket
the bounds span is released (no partition selection), and refusals name what is wrong and charge
nothing. Each person has at most 4 rows, and queries keep 4 rows and 4 groups per person, so the
exact answer involves no bounding choice.
"""

import datetime
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402

DAY_BOUNDS = ("2026-01-01", "2026-12-31")
AT_BOUNDS = ("2026-01-01T00:00:00Z", "2026-06-30T23:59:59.999999Z")
TYPES = ("person_id=integer", "day=date", "at=timestamp", "born=date", "amount=integer")
BOUNDS = ("day=%s:%s" % DAY_BOUNDS, "at=%s:%s" % AT_BOUNDS, "born=1900-01-01:2026-12-31",
          "amount=0:100")
# The same rows as dpq reads them: each calendar column clamped into its bounds, NULL kept.
CLAMPED = ("SELECT person_id, "
           "CASE WHEN day IS NULL THEN NULL ELSE least(greatest(day, date '%s'), date '%s') END "
           "AS day, "
           "CASE WHEN at IS NULL THEN NULL ELSE least(greatest(at, timestamp '%s'), "
           "timestamp '%s') END AS at FROM truth.visits" %
           (DAY_BOUNDS + tuple(t.rstrip("Z") for t in AT_BOUNDS)))
K = 4  # rows and groups kept per person: every person's rows (at most 4 each)


def write_visits(path):
    rng = random.Random(2026)
    lines = ["person_id,day,at,born,amount"]
    start = datetime.date(2025, 12, 1)  # a month before the bounds: clamped to 2026-01-01
    for person in range(1, 301):
        for _ in range(rng.randint(1, K)):
            day = "" if rng.random() < 0.05 else str(start + datetime.timedelta(rng.randint(0, 425)))
            at = ""
            if rng.random() > 0.05:
                t = datetime.datetime(2025, 12, 20) + datetime.timedelta(
                    seconds=rng.randint(0, 220 * 86400), microseconds=rng.choice([0, 500000, 1]))
                at = t.strftime("%Y-%m-%dT%H:%M:%S") + (".%06dZ" % t.microsecond
                                                          if t.microsecond else "Z")
            born = str(datetime.date(1940, 1, 1) + datetime.timedelta(rng.randint(0, 20000)))
            lines.append("%d,%s,%s,%s,%d" % (person, day, at, born, rng.randint(0, 100)))
    # The declared bounds' own extremes and the whole range of years.
    lines.append("301,0001-01-01,0001-01-01T00:00:00Z,1900-01-01,1")
    lines.append("302,9999-12-31,9999-12-31T23:59:59.999999Z,2026-12-31,1")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def create(dpqd, name, csv_path, bounds=BOUNDS, check=True):
    args = ["dataset", "create", name, "--csv", csv_path, "--privacy-unit", "person_id"]
    for t in TYPES:
        args += ["--type", t]
    for b in bounds:
        args += ["--bounds", b]
    return dpqd.ctl(*args, check=check)


@sql_support.needs_psql
class DatesTest(harness.DpqdTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        tmp = cls.make_class_temp_dir()
        cls.csv = os.path.join(tmp, "visits.csv")
        write_visits(cls.csv)
        # One dataset (so one population and ledger of 9e6) for the filters, one for the groups.
        for name in ("visits", "visits_g"):
            create(cls.dpqd, name, cls.csv)
            cls.dpqd.ctl("budget", "set", name, "--epsilon", 9e6, "--delta", 1e-6)
        sql_support.psql(cls.dpqd, "CREATE SCHEMA IF NOT EXISTS truth")
        sql_support.psql(cls.dpqd, "CREATE TABLE truth.visits (person_id integer, day date, "
                                   "at timestamp, born date, amount integer)")
        sql_support.psql(cls.dpqd, "\\copy truth.visits FROM '%s' WITH (FORMAT csv, HEADER true)"
                         % cls.csv)

    def assert_exact(self, value, interval, truth):
        # epsilon 1e6 and sensitivity at most K * K = 16: the Laplace scale is 1.6e-5, so
        # 10 interval widths plus 1e-3 leaves the truth out with probability below exp(-60).
        slack = 10 * (interval["upper"] - interval["lower"]) + 1e-3
        self.assertLessEqual(abs(value - truth), slack, (value, interval, truth))

    def count(self, dataset, *args):
        return self.dpqd.ctl("query", dataset, "--aggregate", "count", "--epsilon", 1e6,
                             "--max-contributions", K, *args)

    def test_where_on_dates_equals_postgresql_on_the_clamped_rows(self):
        # Eight queries at 1e6: the ledger's 9e6 holds them.
        for where in ("day >= '2026-11-23'",
                      "day = '2026-03-15'",
                      "day < '2026-02-01'",  # the clamped December rows are 2026-01-01
                      "day <= '2026-01-01' OR day > '2026-12-30'",
                      "day IN ('2026-01-01', '2026-12-31', '2026-06-15')",
                      "day BETWEEN '2026-04-01' AND '2026-04-30' AND day != '2026-04-15'",
                      "NOT (day BETWEEN '2026-02-01' AND '2026-11-30') OR day IS NULL",
                      "at >= '2026-06-30T12:00:00Z' OR at < '2026-01-01T06:00:00.5Z'"):
            with self.subTest(where=where):
                truth = int(sql_support.truth_rows(
                    self.dpqd, "SELECT count(*) FROM (%s) v WHERE %s" % (CLAMPED, where))[0][0])
                self.assertGreater(truth, 0)
                doc = self.count("visits", "--where", where)
                self.assert_exact(doc["value"], doc["interval"], truth)

    def test_group_by_buckets_releases_every_bucket_of_the_bounds(self):
        cases = [("day", "month", "--where", "at IS NOT NULL"), ("day", "week"), ("at", "day")]
        for case in cases:
            column, bucket, extra = case[0], case[1], list(case[2:])
            with self.subTest(group=column + ":" + bucket):
                doc = self.count("visits_g", "--group-by", "%s:%s" % (column, bucket),
                                 "--max-partitions", K, *extra)
                where = " AND ".join(["%s IS NOT NULL" % column] + extra[1:])
                truth = dict(sql_support.truth_rows(self.dpqd, (
                    "SELECT to_char(date_trunc('%s', %s::timestamp), 'YYYY-MM-DD'), count(*) "
                    "FROM (%s) v WHERE %s GROUP BY 1") % (bucket, column, CLAMPED, where)))
                got = {r["key"][0]: r for r in doc["rows"]}
                self.assertEqual(list(got), sorted(got))
                self.assertEqual(set(got), set(self.buckets(column, bucket)))
                self.assertTrue(set(truth) <= set(got))
                for key, r in got.items():
                    self.assert_exact(r["value"], r["interval"], int(truth.get(key, 0)))

    def test_sql_reads_dates_as_the_flags_do(self):
        # The SQL statement compiles to the flag query's own plan: the flag query that follows is
        # answered from the cache, and both release every week of the bounds.
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6, "
                     "max_groups_contributed = %d) DATE_TRUNC(day, WEEK) AS w, "
                     "COUNT(*, contribution_bounds_per_group => (0, %d)) AS n FROM visits_g "
                     "WHERE at >= TIMESTAMP '2026-03-01 00:00:00' GROUP BY w ORDER BY w" % (K, K))
        plan = self.dpqd.ctl("sql", statement, "--explain")
        self.assertEqual(plan["parts"][0]["group_by"], ["day:week"])
        doc = self.dpqd.ctl("sql", statement)
        self.assertEqual([r[0] for r in doc["rows"]], self.buckets("day", "week"))
        truth = dict(sql_support.truth_rows(self.dpqd, (
            "SELECT to_char(date_trunc('week', day::timestamp), 'YYYY-MM-DD'), count(*) "
            "FROM (%s) v WHERE day IS NOT NULL AND at >= timestamp '2026-03-01' GROUP BY 1")
            % CLAMPED))
        self.assertTrue(set(truth) <= {r[0] for r in doc["rows"]})
        for key, n in doc["rows"]:
            self.assertEqual(n, int(truth.get(key, 0)), key)
        flag = self.count("visits_g", "--group-by", "day:week", "--max-partitions", K,
                          "--where", "at >= '2026-03-01T00:00:00Z'")
        self.assertTrue(flag["cached"])
        self.assertEqual([round(r["value"]) for r in flag["rows"]], [n for _, n in doc["rows"]])

    @staticmethod
    def buckets(column, bucket):
        """The bucket starts the declared bounds span, computed here independently of dpq."""
        lo, hi = DAY_BOUNDS if column == "day" else (AT_BOUNDS[0][:10], AT_BOUNDS[1][:10])
        first = datetime.date.fromisoformat(lo)
        last = datetime.date.fromisoformat(hi)
        if bucket == "week":
            first -= datetime.timedelta(first.weekday())  # Monday
        if bucket == "month":
            first = first.replace(day=1)
        out = []
        while first <= last:
            out.append(str(first))
            if bucket == "month":
                first = (first.replace(day=28) + datetime.timedelta(4)).replace(day=1)
            else:
                first += datetime.timedelta(7 if bucket == "week" else 1)
        return out

    def test_refusals_name_the_problem_and_charge_nothing(self):
        before = self.snapshot(self.dpqd, "visits_g")
        for args, words in (
                (["--where", "day > '2026-13-01'"], ["day", "YYYY-MM-DD"]),
                (["--where", "day > 20260101"], ["day", "date"]),
                (["--where", "at < '2026-02-01'"], ["at", "timestamp"]),
                (["--group-by", "day"], ["day:week"]),
                (["--group-by", "day:hour"], ["hour"]),
                (["--group-by", "born:day"], ["46386 buckets"]),
                (["--aggregate", "sum", "--column", "day"], ["numeric"])):
            with self.subTest(args=args):
                aggregate = [] if "--aggregate" in args else ["--aggregate", "count"]
                r = self.dpqd.ctl("query", "visits_g", "--epsilon", 1, *(aggregate + args),
                                  check=False)
                self.assert_error(r, "INVALID_ARGUMENT", words)
        dp = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) "
        for statement, code, words in (
                ("COUNT(*) FROM visits_g WHERE day > DATE '2026-13-01'", "INVALID_ARGUMENT",
                 ["'2026-13-01'", "YYYY-MM-DD"]),
                ("COUNT(*) FROM visits_g WHERE at < DATE '2026-02-01'", "INVALID_ARGUMENT",
                 ["at", "timestamp"]),
                ("COUNT(*) FROM visits_g GROUP BY day", "INVALID_ARGUMENT",
                 ["DATE_TRUNC(day, WEEK)"]),
                ("COUNT(*) FROM visits_g GROUP BY DATE_TRUNC(day, HOUR)", "INVALID_ARGUMENT",
                 ["HOUR"]),
                ("COUNT(*) FROM visits_g GROUP BY DATE_TRUNC(born, DAY)", "INVALID_ARGUMENT",
                 ["46386 buckets"]),
                ("SUM(day) FROM visits_g", "UNIMPLEMENTED", ["day is a date"])):
            with self.subTest(sql=statement):
                self.assert_error(self.dpqd.ctl("sql", dp + statement, check=False), code, words)
        self.assertEqual(self.snapshot(self.dpqd, "visits_g"), before)

    def test_bounds_are_required_and_shown(self):
        r = create(self.dpqd, "nobounds", self.csv, bounds=BOUNDS[2:], check=False)
        self.assert_error(r, "INVALID_ARGUMENT", ["day", "bounds are required"])
        r = create(self.dpqd, "badbounds", self.csv, bounds=("day=2026-02-30:2026-12-31",) +
                   BOUNDS[1:], check=False)
        self.assert_error(r, "INVALID_ARGUMENT", ["day", "2026-02-30"])
        show = self.dpqd.ctl("dataset", "show", "visits")
        columns = {c["name"]: c for c in show["columns"]}
        self.assertEqual(columns["day"]["type"], "date")
        self.assertEqual((columns["day"]["lower"], columns["day"]["upper"]), DAY_BOUNDS)
        self.assertEqual((columns["at"]["lower"], columns["at"]["upper"]), AT_BOUNDS)

    def test_a_bad_cell_refuses_the_load_naming_line_and_column(self):
        path = os.path.join(self.make_temp_dir(), "bad.csv")
        with open(path, "w") as f:
            f.write("person_id,day,at,born,amount\n1,2026-01-05,2026-01-05T00:00:00Z,1950-01-01,3\n"
                    "2,2026-01-05,2026-01-05 10:00:00,1950-01-01,3\n")
        r = create(self.dpqd, "badcell", path, check=False)
        self.assert_error(r, "INVALID_ARGUMENT", ["line 3", "column at", "timestamp"])


if __name__ == "__main__":
    unittest.main()
