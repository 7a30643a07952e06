#!/usr/bin/python3
"""End-to-end: `dpqctl sql` (AnalystService.ExecuteSql / ExplainSql) through dpqd.

At epsilon 1e6 the noise is far below the tolerances used here, so each released value must
equal PostgreSQL's exact SQL answer on the same clamped, bounded rows (computed in the same
embedded cluster on a plain copy of the CSV). Refusals and --explain charge nothing; a repeated
request id replays; an identical single-aggregate question is answered from the result cache.
"""

import math
import os
import re
import sys
import tempfile
import subprocess
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402

DP = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6%s) "


def dp(extra=""):
    return DP % extra


def dp5(extra=""):
    """epsilon 1e5: still far below the rounding of a count (scale <= 1e-4 for sensitivity <= 10),
    for the colon tests, so the class's one colon budget (9e6) lasts."""
    return (DP % extra).replace("1e6", "1e5", 1)


class SqlCase(harness.DpqdTestCase):
    """A dpqd of the class's own with the SQL datasets and their PostgreSQL truth tables."""

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        sql_support.create_datasets(cls.dpqd)
        sql_support.load_truth(cls.dpqd)

    def sql(self, statement, *args, check=True):
        return self.dpqd.ctl("sql", statement, *args, check=check)

    def truth(self, sql):
        return sql_support.truth_rows(self.dpqd, sql)


@sql_support.needs_psql
class SqlTest(SqlCase):

    def assert_value(self, got, want, noise=None):
        # epsilon 1e6: Laplace scale ~ sensitivity * 1e-6; a deviation of 1e-3 * max(1, |want|)
        # is more than 100 scales for every sensitivity below 10 (tail exp(-100)).
        self.assertAlmostEqual(got, want, delta=1e-3 * max(1.0, abs(want)), msg=noise)

    def test_count_star_counts_each_unit_once_by_default(self):
        doc = self.sql(dp() + "COUNT(*) AS n FROM colon")
        self.assertEqual(doc["columns"], [{"name": "n", "type": "int64"}])
        (want,), = self.truth("SELECT count(DISTINCT patient_id) FROM truth.colon")
        self.assertEqual(doc["rows"], [[int(want)]])

    def test_count_bounds_per_group_clamp_each_units_count(self):
        doc = self.sql(dp() + "COUNT(*, contribution_bounds_per_group => (0, 2)) FROM colon")
        (want,), = self.truth("SELECT sum(least(c, 2)) FROM (SELECT patient_id, count(*) c "
                              "FROM truth.colon GROUP BY 1) u")
        self.assertEqual(doc["rows"][0][0], int(want))
        self.assertEqual(doc["columns"][0]["name"], "f0_")

    def test_count_with_a_lower_bound_clamps_each_units_count_from_below(self):
        # colon holds two rows per patient: a lower bound of 3 lifts every patient to 3.
        doc = self.sql(dp5() + "COUNT(*, contribution_bounds_per_group => (3, 5)) AS n FROM colon")
        (want,), = self.truth("SELECT sum(least(greatest(c, 3), 5)) FROM (SELECT patient_id, "
                              "count(*) c FROM truth.colon GROUP BY 1) u")
        self.assertEqual(doc["rows"], [[int(want)]])
        # Its flag twin: --per-unit with the bounds of a row count.
        flag = self.dpqd.ctl("query", "colon", "--aggregate", "count", "--per-unit", "--lower", 3,
                             "--upper", 5, "--epsilon", 1e5)
        self.assertEqual(round(flag["value"]), int(want))
        # Grouped, COUNT(col) counts a unit's non-NULL values of col in the group.
        doc = self.sql(dp5(", delta = 1e-3") + "rx, COUNT(nodes, contribution_bounds_per_group => "
                       "(2, 3)) AS n FROM colon GROUP BY rx ORDER BY rx")
        want = self.truth("SELECT rx, sum(least(greatest(c, 2), 3)) FROM (SELECT patient_id, rx, "
                          "count(nodes) c FROM truth.colon WHERE nodes IS NOT NULL GROUP BY 1, 2) "
                          "u GROUP BY 1 ORDER BY 1")
        self.assertEqual(doc["rows"], [[r, int(n)] for r, n in want])

    def test_width_bucket_is_the_flag_histogram_over_its_buckets(self):
        # Values outside [0, 100) join the extreme buckets (the flag histogram clamps them):
        # PostgreSQL's LEAST(GREATEST(width_bucket(...), 1), n). Every bucket is released, empty
        # or not (the grid is public); rows whose age is NULL are dropped.
        doc = self.sql(dp() + "WIDTH_BUCKET(age, 0, 60, 6) AS bucket, COUNT(*) AS n FROM slid "
                       "GROUP BY bucket ORDER BY bucket")
        self.assertEqual(doc["columns"], [{"name": "bucket", "type": "int64"},
                                          {"name": "n", "type": "int64"}])
        counts = dict((int(b), int(n)) for b, n in self.truth(
            "SELECT least(greatest(width_bucket(age, 0, 60, 6), 1), 6), count(DISTINCT person_id) "
            "FROM truth.slid WHERE age IS NOT NULL GROUP BY 1"))
        self.assertGreater(counts[6], 0)  # ages of 60 and above are counted in the last bucket
        self.assertEqual(doc["rows"], [[b, counts.get(b, 0)] for b in range(1, 7)])
        # The flag twin is one question: it is answered from the cache, with the same values.
        flag = self.dpqd.ctl("query", "slid", "--aggregate", "histogram", "--column", "age",
                             "--bins", "0,10,20,30,40,50,60", "--epsilon", 1e6)
        self.assertTrue(flag["cached"])
        self.assertEqual([round(r["value"]) for r in flag["rows"]], [n for _, n in doc["rows"]])
        # --explain shows the histogram it compiles to, its bins and K (and charges nothing).
        plan = self.sql(dp() + "WIDTH_BUCKET(age, 0, 60, 6) AS bucket, COUNT(*) AS n FROM slid "
                        "GROUP BY bucket", "--explain")
        part, = plan["parts"]
        self.assertEqual((part["aggregate"], part["column"], part["max_contributions"]),
                         ("histogram", "age", 1))
        self.assertEqual(part["bins"], [0, 10, 20, 30, 40, 50, 60])

    def test_width_bucket_with_edges_and_a_group_column(self):
        doc = self.sql(dp5(", delta = 1e-3") + "rx, WIDTH_BUCKET(time, (0, 365, 1825, 3650)) AS b, "
                       "COUNT(time, contribution_bounds_per_group => (0, 2)) AS n FROM colon "
                       "GROUP BY rx, b ORDER BY rx, b")
        want = self.truth(
            "SELECT rx, least(greatest(width_bucket(time, ARRAY[0, 365, 1825, 3650]), 1), 3) b, "
            "count(*) FROM truth.colon WHERE time IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2")
        self.assertEqual(doc["rows"], [[r, int(b), int(n)] for r, b, n in want])
        # Only COUNT answers per bucket: refused with the position, nothing charged.
        before = self.snapshot(self.dpqd, "colon")
        r = self.sql(dp() + "AVG(time) FROM colon GROUP BY WIDTH_BUCKET(age, 0, 100, 4)", check=False)
        self.assert_error(r, "UNIMPLEMENTED", "line 1, column 58: AVG is not supported")
        self.assertEqual(self.snapshot(self.dpqd, "colon"), before)

    def test_null_group_key_is_its_own_group_when_keys_are_selected(self):
        # slid's language is missing for 121 persons: with keys selected from the data they form
        # a NULL group (ZetaSQL), released when selected; ascending order puts it first.
        doc = self.sql(dp(", delta = 0.1") + "language, COUNT(*) AS n FROM slid GROUP BY language "
                       "ORDER BY language")
        want = self.truth("SELECT language, count(*) FROM truth.slid GROUP BY 1 ORDER BY 1 NULLS FIRST")
        self.assertEqual(want[0][0], "")  # psql prints NULL as an empty field
        self.assertEqual(doc["rows"], [[l or None, int(n)] for l, n in want])
        # The flag query shares the scan: its NULL key is JSON null, printed NULL in the table.
        flag = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--group-by", "language",
                             "--epsilon", 1e6, "--delta", 0.1)
        got = {tuple(r["key"]): round(r["value"]) for r in flag["rows"]}
        self.assertEqual(got[(None,)], int(want[0][1]))
        text = self.dpqd.ctl_text("query", "slid", "--aggregate", "count", "--group-by", "language",
                                  "--epsilon", 1e6, "--delta", 0.1)
        null_line = re.search(r"(?m)^NULL +([0-9.]+) ", text)
        self.assertIsNotNone(null_line, text)
        self.assertEqual(round(float(null_line.group(1))), int(want[0][1]))
        # Declared keys are the released key set: NULL is not one of them.
        declared = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--group-by", "language",
                                 "--keys", "English,French,Other", "--epsilon", 1e6)
        self.assertEqual(sorted(tuple(r["key"]) for r in declared["rows"]),
                         [("English",), ("French",), ("Other",)])

    def test_sum_and_avg_pre_aggregate_per_unit(self):
        doc = self.sql(dp() + "SUM(time, contribution_bounds_per_group => (0, 4000)) AS s, "
                       "AVG(time, contribution_bounds_per_group => (500, 3000)) AS a FROM colon")
        (s, a), = self.truth(
            "SELECT sum(least(greatest(s, 0), 4000)), avg(least(greatest(m, 500), 3000)) FROM "
            "(SELECT patient_id, sum(time) s, avg(time) m FROM truth.colon WHERE time IS NOT NULL "
            "GROUP BY 1) u")
        self.assert_value(doc["rows"][0][0], float(s))
        self.assert_value(doc["rows"][0][1], float(a))
        self.assertEqual(doc["epsilon"], 1e6)
        # The flag query with --per-unit is the same bounding.
        flag = self.dpqd.ctl("query", "colon", "--aggregate", "sum", "--column", "time",
                             "--lower", 0, "--upper", 4000, "--per-unit", "--epsilon", 1e6)
        self.assert_value(flag["value"], float(s))

    def test_grouped_filtered_ordered_limited(self):
        doc = self.sql(
            "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6, delta = 1e-3, "
            "max_groups_contributed = 1, privacy_unit_column = person_id) "
            "language, COUNT(*) AS n, AVG(wages, contribution_bounds_per_group => (0, 50)) AS "
            "mean_wage FROM slid WHERE age >= 30 GROUP BY language ORDER BY n DESC LIMIT 2")
        want = self.truth(
            "SELECT language, count(DISTINCT person_id) n, "
            "avg(least(greatest(w, 0), 50)) FILTER (WHERE w IS NOT NULL) FROM (SELECT person_id, "
            "language, avg(wages) w FROM truth.slid WHERE age >= 30 AND language IS NOT NULL "
            "GROUP BY 1, 2) u GROUP BY 1 ORDER BY n DESC LIMIT 2")
        self.assertEqual([c["name"] for c in doc["columns"]], ["language", "n", "mean_wage"])
        self.assertEqual(len(doc["rows"]), 2)
        for got, w in zip(doc["rows"], want):
            self.assertEqual(got[0], w[0])
            self.assertEqual(got[1], int(w[1]))
            self.assert_value(got[2], float(w[2]))
        self.assertEqual(doc["delta"], 1e-3)

    def test_row_clamped_aggregates_keep_five_rows_per_unit(self):
        doc = self.sql(dp() + "VAR_POP(time, contribution_bounds_per_row => (0, 3000)) AS v, "
                       "STDDEV_POP(time) AS s FROM colon")
        (v, s), = self.truth("SELECT var_pop(least(greatest(time, 0), 3000)), "
                             "stddev_pop(least(greatest(time, 0), 5000)) FROM truth.colon "
                             "WHERE time IS NOT NULL")
        # colon has two rows per patient: K = 5 keeps all of them.
        self.assertAlmostEqual(doc["rows"][0][0], float(v), delta=1e-3 * float(v))
        self.assertAlmostEqual(doc["rows"][0][1], float(s), delta=1e-3 * float(s))

    def test_quantiles_within_one_bucket(self):
        doc = self.sql(dp() + "PERCENTILE_CONT(wages, 0.5) AS median, "
                       "APPROX_QUANTILES(age, 4) AS q FROM slid")
        (median,), = self.truth("SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY "
                                "least(greatest(wages, 0), 100)) FROM truth.slid "
                                "WHERE wages IS NOT NULL")
        q = self.truth("SELECT percentile_disc(x) WITHIN GROUP (ORDER BY age) FROM truth.slid, "
                       "unnest(ARRAY[0, 0.25, 0.5, 0.75, 1]) x GROUP BY x ORDER BY x")
        # (GREATEST ignores NULLs, hence the explicit IS NOT NULL.) The DP quantile answers within a histogram bucket of (U - L) / 1000 of the exact order
        # statistic (planner.cc, kQuantileBuckets): two buckets of slack.
        self.assertAlmostEqual(doc["rows"][0][0], float(median), delta=2 * 100 / 1000)
        self.assertEqual(doc["columns"][1]["type"], "array<float64>")
        self.assertEqual(len(doc["rows"][0][1]), 5)
        got = doc["rows"][0][1]
        bucket = 120 / 1000
        # The extremes are order statistics of rank 0 and n: every bucket below the minimum (above
        # the maximum) has the same rank, so only the side is pinned.
        self.assertLessEqual(got[0], float(q[0][0]) + 2 * bucket)
        self.assertGreaterEqual(got[4], float(q[4][0]) - 2 * bucket)
        for g, (want,) in zip(got[1:4], q[1:4]):
            self.assertAlmostEqual(g, float(want), delta=2 * bucket)

    def test_post_processing_arithmetic_and_where(self):
        doc = self.sql(dp() + "2 * COUNT(*) + 1 AS twice, SUM(s.wages) / COUNT(*) AS ratio "
                       "FROM slid AS s WHERE s.sex IN ('Female') AND s.age BETWEEN 20 AND 40 "
                       "AND s.wages IS NOT NULL")
        (n, total), = self.truth(
            "SELECT count(DISTINCT person_id), sum(least(greatest(wages, 0), 100)) FROM truth.slid "
            "WHERE sex IN ('Female') AND age BETWEEN 20 AND 40 AND wages IS NOT NULL")
        self.assertEqual(doc["rows"][0][0], 2 * int(n) + 1)
        self.assert_value(doc["rows"][0][1], float(total) / int(n))

    def test_refusals_charge_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        cases = [
            ("SELECT COUNT(*) FROM slid", "UNIMPLEMENTED", "line 1, column 1"),
            (dp() + "COUNT(*) FROM slid; DROP TABLE slid", "UNIMPLEMENTED", "DROP"),
            (dp() + "COUNT(*) FROM slid /* x */; DELETE FROM slid", "UNIMPLEMENTED", "DELETE"),
            (dp() + "MIN(wages) FROM slid", "UNIMPLEMENTED", "MIN"),
            (dp(", report_format = 'x'") + "COUNT(*) FROM slid", "INVALID_ARGUMENT", "report_format"),
            (dp() + "language, COUNT(*) FROM slid GROUP BY language", "INVALID_ARGUMENT", "delta"),
            (dp() + "SUM(education) FROM slid WHERE x = 1", "INVALID_ARGUMENT", "column x"),
            (dp() + "COUNT(*) FROM nosuch", "NOT_FOUND", None),
            (dp() + "COUNT(*) FROM slid WHERE sex = 1", "INVALID_ARGUMENT", "WHERE"),
        ]
        for statement, code, words in cases:
            with self.subTest(statement=statement):
                self.assert_error(self.sql(statement, check=False), code, words)
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_explain_charges_nothing_and_shows_the_plan(self):
        before = self.snapshot(self.dpqd, "slid")
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) COUNT(*), "
                       "AVG(wages) FROM slid", "--explain")
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)
        self.assertEqual(doc["epsilon"], 2)
        self.assertEqual([p["function"] for p in doc["parts"]], ["COUNT", "AVG"])
        self.assertEqual([p["epsilon"] for p in doc["parts"]], [1, 1])
        self.assertEqual(doc["parts"][1]["lower"], 0)
        self.assertEqual(doc["parts"][1]["upper"], 100)
        self.assertTrue(doc["parts"][1]["pre_aggregate"])
        self.assertEqual(doc["parts"][0]["sensitivity"], 1)
        self.assertGreater(doc["parts"][0]["error"], 0)

    def test_request_id_replays_and_a_statement_is_one_audit_row(self):
        before = self.snapshot(self.dpqd, "slid")
        statement = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*), SUM(age) FROM slid"
        first = self.sql(statement, "--request-id", "sql-replay-1")
        self.assertFalse(first["replayed"])
        after = self.snapshot(self.dpqd, "slid")
        self.assertAlmostEqual(after[0] - before[0], 0.5, delta=1e-12)
        self.assertEqual(after[2], before[2] + 1, "one statement, one audit row")
        again = self.sql(statement, "--request-id", "sql-replay-1")
        self.assertTrue(again["replayed"])
        self.assertEqual(again["rows"], first["rows"])
        self.assertEqual(self.snapshot(self.dpqd, "slid"), after)
        other = self.sql(statement.replace("0.5", "0.25"), "--request-id", "sql-replay-1", check=False)
        self.assert_error(other, "ALREADY_EXISTS")

    def test_identical_question_is_cached_and_shared_with_the_flag_query(self):
        statement = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.125) COUNT(*) FROM slid"
        first = self.sql(statement)
        self.assertFalse(first["cached"])
        before = self.snapshot(self.dpqd, "slid")
        second = self.sql(statement)
        self.assertTrue(second["cached"])
        self.assertEqual(second["epsilon"], 0)
        self.assertEqual(second["rows"], first["rows"])
        flag = self.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.125)
        self.assertTrue(flag["cached"], "the flag query and its SQL twin are one question")
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_a_script_of_statements_is_charged_jointly(self):
        before = self.snapshot(self.dpqd, "colon")
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM colon; "
                       "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) AVG(age) FROM colon;")
        self.assertEqual(len(doc["results"]), 2)
        after = self.snapshot(self.dpqd, "colon")
        self.assertAlmostEqual(after[0] - before[0], 0.75, delta=1e-12)
        self.assertEqual(after[2], before[2] + 1)

    def test_reads_the_statement_from_a_file_and_from_stdin(self):
        statement = dp() + "COUNT(*) AS n FROM colon"
        with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
            f.write(statement)
        self.addCleanup(os.unlink, f.name)
        from_file = self.dpqd.ctl("sql", "--file", f.name)
        argv = [harness.dpqctl_path(), "--server", self.dpqd.address, "--json", "--token",
                self.dpqd.admin_token, "sql"]
        proc = subprocess.run(argv, input=statement.encode(), capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        import json
        from_stdin = json.loads(proc.stdout)
        self.assertEqual(from_file["rows"], from_stdin["rows"])

    def test_python_client_sql(self):
        harness.require_grpc_stubs()
        import dpq  # the package of client/python, assembled in <build>/python
        client = dpq.Client(self.dpqd.address, self.dpqd.admin_token)
        self.addCleanup(client.close)
        out = client.sql(dp() + "COUNT(*) AS n FROM colon")
        (want,), = self.truth("SELECT count(DISTINCT patient_id) FROM truth.colon")
        self.assertEqual(out.columns, ["n"])
        self.assertEqual(out.rows, [[int(want)]])
        plan = client.explain_sql(dp() + "COUNT(*) FROM colon")
        self.assertEqual(plan["parts"][0]["function"], "COUNT")
        with self.assertRaises(dpq.DpqError) as e:
            client.sql("SELECT COUNT(*) FROM colon")
        self.assertEqual(e.exception.code, "UNIMPLEMENTED")

    def test_text_output_is_an_aligned_table(self):
        text = self.dpqd.ctl_text("sql", dp() + "COUNT(*) AS n, AVG(age) AS mean_age FROM colon")
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("n"), text)
        self.assertIn("mean_age", lines[0])
        self.assertIn("charged: epsilon 1000000", text)
        self.assertTrue(text.endswith("\n"))


@sql_support.needs_psql
class SqlFlagParityTest(SqlCase):
    """dpq's SQL extensions (README "SQL"): each statement and its flag twin through the real
    dpqctl. A twin is the same question (same fingerprint): the second is answered from the result
    cache, charging nothing, which proves the two plans equal end to end."""

    def assert_twin_cached(self, flag_args, dataset="colon"):
        before = self.snapshot(self.dpqd, dataset)
        flag = self.dpqd.ctl("query", dataset, *flag_args)
        self.assertTrue(flag["cached"], "the flag query and its SQL twin are one question")
        self.assertEqual(self.snapshot(self.dpqd, dataset), before)
        return flag

    def test_gaussian_mechanism_option(self):
        before = self.snapshot(self.dpqd, "colon")
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6, delta = 1e-3, "
                       "mechanism = 'gaussian') COUNT(*) AS n FROM colon")
        (want,), = self.truth("SELECT count(DISTINCT patient_id) FROM truth.colon")
        # Discrete Gaussian at epsilon 1e6: sigma ~1e-3 (CKS 2020), so the rounded count is exact.
        self.assertEqual(doc["rows"], [[int(want)]])
        after = self.snapshot(self.dpqd, "colon")
        self.assertAlmostEqual(after[1] - before[1], 1e-3, delta=1e-15, msg="delta is charged")
        flag = self.assert_twin_cached(["--aggregate", "count", "--mechanism", "gaussian",
                                        "--delta", 1e-3, "--epsilon", 1e6])
        self.assertEqual(flag["mechanism"], "gaussian")
        plan = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6, "
                        "mechanism = gaussian) COUNT(*), SUM(time) FROM colon", "--explain")
        self.assertEqual([p["mechanism"] for p in plan["parts"]], ["gaussian", "gaussian"])
        self.assertEqual([p["delta"] for p in plan["parts"]], [5e-7, 5e-7])
        self.assertEqual(plan["delta"], 1e-6)

    def test_row_level_sum_with_max_rows_per_group(self):
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6, max_rows_per_group = 2) "
                       "SUM(time, contribution_bounds_per_row => (0, 3000)) AS s FROM colon")
        # colon has two rows per patient: K = 2 keeps both, each clamped to [0, 3000].
        (want,), = self.truth("SELECT sum(least(greatest(time, 0), 3000)) FROM truth.colon "
                              "WHERE time IS NOT NULL")
        self.assertAlmostEqual(doc["rows"][0][0], float(want), delta=1e-3 * float(want))
        self.assert_twin_cached(["--aggregate", "sum", "--column", "time", "--lower", 0,
                                 "--upper", 3000, "--max-contributions", 2, "--epsilon", 1e6])

    def test_row_level_avg_keeps_five_rows_by_default(self):
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6) "
                       "AVG(nodes, contribution_bounds_per_row => (0, 10)) AS a FROM colon")
        (want,), = self.truth("SELECT avg(least(greatest(nodes, 0), 10)) FROM truth.colon "
                              "WHERE nodes IS NOT NULL")
        self.assertAlmostEqual(doc["rows"][0][0], float(want), delta=1e-3 * float(want))
        self.assert_twin_cached(["--aggregate", "mean", "--column", "nodes", "--lower", 0,
                                 "--upper", 10, "--max-contributions", 5, "--epsilon", 1e6])

    def test_where_states_the_key_list(self):
        before = self.snapshot(self.dpqd, "colon")
        doc = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6) rx, COUNT(*) AS n "
                       "FROM colon WHERE rx IN ('Obs', 'Lev', 'Nope') GROUP BY rx ORDER BY rx")
        want = dict(self.truth("SELECT rx, count(DISTINCT patient_id) FROM truth.colon "
                               "WHERE rx IN ('Obs', 'Lev') GROUP BY rx"))
        # Every listed key, the empty one too, and no partition selection: no delta charged.
        self.assertEqual(doc["rows"], [["Lev", int(want["Lev"])], ["Nope", 0], ["Obs", int(want["Obs"])]])
        after = self.snapshot(self.dpqd, "colon")
        self.assertEqual(after[1], before[1])
        flag = self.assert_twin_cached(["--aggregate", "count", "--group-by", "rx",
                                        "--keys", "Obs,Lev,Nope", "--where",
                                        "rx IN ('Obs', 'Lev', 'Nope')", "--epsilon", 1e6])
        self.assertEqual({r["key"][0] for r in flag["rows"]}, {"Obs", "Lev", "Nope"})

    def test_explain_says_what_the_error_measures(self):
        before = self.snapshot(self.dpqd, "slid")
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 4) COUNT(*), SUM(wages), "
                     "AVG(wages), VAR_POP(wages), PERCENTILE_CONT(wages, 0.5) FROM slid")
        plan = self.sql(statement, "--explain")
        self.assertEqual([p["error_basis"] for p in plan["parts"]],
                         ["value", "value", "per_count", "not_stated", "rank"])
        self.assertGreater(plan["parts"][2]["error"], 0)
        self.assertIsNone(plan["parts"][3]["error"], "a variance's error is not stated")
        # AVG's per-count error is its noisy sum's half-width. Its Laplace scale equals SUM's:
        # half of the same epsilon share, and the centred sensitivity (U - L) / 2 = 50 is half of
        # SUM's max(|L|, |U|) = 100. The half-width b ln(1 / (1 - c)) is taken at c = 0.975 for
        # the mean (the 5 % split over its sum and count, a union bound) and 0.95 for the sum.
        self.assertAlmostEqual(plan["parts"][2]["error"] / plan["parts"][1]["error"],
                               math.log(40) / math.log(20), delta=1e-6)  # shares round down
        text = self.dpqd.ctl_text("sql", statement, "--explain")
        self.assertIn("/ N", text)
        self.assertIn("n/a (needs N)", text)
        self.assertTrue(text.endswith("\n"))
        harness.require_grpc_stubs()
        import dpq  # the package of client/python, assembled in <build>/python
        client = dpq.Client(self.dpqd.address, self.dpqd.admin_token)
        self.addCleanup(client.close)
        from_python = client.explain_sql(statement)
        self.assertEqual([p["error_basis"] for p in from_python["parts"]],
                         ["value", "value", "per_count", "not_stated", "rank"])
        self.assertIsNone(from_python["parts"][3]["error"])
        self.assertEqual([c["statistic"] for c in from_python["parts"][3]["components"]],
                         ["sum", "sum_squares", "count"])
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)

    def test_explain_shows_every_noise_component_at_the_scale_the_run_uses(self):
        statement = dp() + "VAR_POP(wages) AS v FROM slid"
        plan = self.sql(statement, "--explain")
        part = plan["parts"][0]
        self.assertEqual([c["statistic"] for c in part["components"]],
                         ["sum", "sum_squares", "count"])
        run = self.sql(statement)
        released = run["noise"][0][0]
        # Both come from the same calibration of the same plan: equal, not merely close.
        self.assertEqual(released["components"], part["components"])
        self.assertEqual(released["noise_scale"], part["noise_scale"])
        self.assertEqual(part["noise_scale"], part["components"][1]["noise_scale"])
        self.assertEqual(part["sensitivity"], part["components"][1]["sensitivity"])
        text = self.dpqd.ctl_text("sql", statement, "--explain")
        self.assertIn("sum_squares", text)
        self.assertTrue(text.endswith("\n"))

    def test_explain_reports_the_quantile_mechanism_the_run_uses(self):
        plan = self.sql(dp() + "PERCENTILE_CONT(wages, 0.5) AS m FROM slid", "--explain")
        part = plan["parts"][0]
        self.assertEqual(part["mechanism"], "exponential")
        self.assertEqual(part["quantile"]["method"], "exponential")
        self.assertGreater(part["quantile"]["epsilon"], 0)
        self.assertGreater(part["noise_scale"], 0, "the intervals' noisy histogram")
        run = self.sql(dp() + "PERCENTILE_CONT(wages, 0.5) AS m FROM slid")
        self.assertEqual(run["noise"][0][0]["noise_scale"], part["noise_scale"])
        # More than five levels: no exponential mechanism, the values come off the noisy
        # histogram (the flag plan and query, whose rows carry the scale).
        levels = ["--quantiles", "0.1,0.25,0.5,0.75,0.9,0.99"]
        flag = ["slid", "--aggregate", "quantile", "--column", "wages", "--lower", 0,
                "--upper", 100, "--epsilon", 1e6] + levels
        planned = self.dpqd.ctl("plan", *flag)
        self.assertEqual(planned["quantile"]["method"], "histogram")
        self.assertEqual(planned["mechanism"], "laplace")
        answer = self.dpqd.ctl("query", *flag)
        self.assertEqual(answer["mechanism"], "laplace")
        self.assertEqual(answer["rows"][0]["noise_scale"], planned["noise_scale"])
        self.assertEqual(answer["components"], planned["components"])

    def test_explain_shows_the_released_keys(self):
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e6) rx, COUNT(*) AS n "
                     "FROM colon WHERE rx IN ('Obs', 'Lev', 'Nope') GROUP BY rx")
        keys = self.sql(statement, "--explain")["parts"][0]["keys"]
        self.assertEqual(keys["source"], "declared")
        run = self.sql(statement)
        self.assertEqual(sorted(k[0] for k in keys["keys"]), sorted(r[0] for r in run["rows"]))
        self.assertIn("keys: declared, all 3 released", self.dpqd.ctl_text("sql", statement,
                                                                           "--explain"))
        selected = self.sql("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) "
                            "language, COUNT(*) FROM slid GROUP BY language", "--explain")
        keys = selected["parts"][0]["keys"]
        self.assertEqual(keys["source"], "selected")
        self.assertGreater(keys["selection_epsilon"], 0)
        self.assertGreater(keys["selection_delta"], 0)
        self.assertNotIn("keys", keys)

    def test_extension_refusals_charge_nothing(self):
        before = self.snapshot(self.dpqd, "slid")
        w = "SELECT WITH DIFFERENTIAL_PRIVACY "
        cases = [
            (w + "OPTIONS (epsilon = 1, mechanism = 'gaussian') COUNT(*) FROM slid",
             "line 1, column 56: mechanism 'gaussian' needs delta > 0"),
            (w + "OPTIONS (epsilon = 1, mechanism = 'exponential') COUNT(*) FROM slid",
             "line 1, column 68: mechanism must be"),
            (w + "OPTIONS (epsilon = 1, max_rows_per_group = 0) VAR_POP(wages) FROM slid",
             "line 1, column 77: max_rows_per_group must be a whole number"),
            (w + "OPTIONS (epsilon = 1) SUM(wages, contribution_bounds_per_group => (0, 1), "
                 "contribution_bounds_per_row => (0, 1)) FROM slid", "not both"),
            (w + "OPTIONS (epsilon = 1, delta = 1e-6, mechanism = gaussian) "
                 "PERCENTILE_CONT(wages, 0.5) FROM slid", "exponential mechanism"),
            (w + "OPTIONS (epsilon = 1) language, COUNT(*) FROM slid WHERE language = 'French' "
                 "AND language = 'Other' GROUP BY language", "WHERE admits no value"),
            # Row bounds must lie within the declared ones (the planner's check, as for the flag).
            (w + "OPTIONS (epsilon = 1) SUM(wages, contribution_bounds_per_row => (0, 500)) FROM slid",
             "declared bounds"),
        ]
        for statement, words in cases:
            with self.subTest(statement=statement):
                self.assert_error(self.sql(statement, check=False), "INVALID_ARGUMENT", words)
        self.assertEqual(self.snapshot(self.dpqd, "slid"), before)


if __name__ == "__main__":
    unittest.main()
