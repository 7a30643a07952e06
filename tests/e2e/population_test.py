#!/usr/bin/python3
"""End-to-end: populations through the real dpqctl and dpqd.

`population create|list|show|drop` (text and --json), `dataset create --population / --public`,
one budget and one audit chain for every dataset of a population, join refusals that charge
nothing, `population drop` only once its datasets are gone, and contribution bounding applied to
the joined rows (a unit with 5 x 5 rows on the two sides of a join counts at most K).

The datasets are sql_support.py's population trial, derived from colon.csv at test time.
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sql_support  # noqa: E402


def dp(options="epsilon = 1e6"):
    return "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (%s) " % options


class PopulationTest(harness.DpqdTestCase):
    def setUp(self):
        self.dpqd = self.new_dpqd()

    @staticmethod
    def dataset_args(table, population="trial"):
        """`dataset create` of sql_support.TRIAL's `table` in `population`."""
        columns, bounds, _ = sql_support.TRIAL[table]
        args = ["dataset", "create", table, "--csv", sql_support.trial_csv(table),
                "--population", population, "--privacy-unit", "patient_id"]
        for c in columns:
            args += ["--type", "%s=%s" % (c, sql_support.trial_type(c))]
        for b in bounds:
            args += ["--bounds", b]
        return args

    def create_dataset(self, table, text=False):
        """Dataset `table` in population trial; dpqctl's text output if `text`."""
        args = self.dataset_args(table)
        return self.dpqd.ctl_text(*args) if text else self.dpqd.ctl(*args)

    def create_regimens(self):
        args = ["dataset", "create", "regimens", "--csv", sql_support.trial_csv("regimens"),
                "--public"]
        for c in sql_support.TRIAL_COLUMNS["regimens"]:
            args += ["--type", "%s=%s" % (c, sql_support.trial_type(c))]
        return self.dpqd.ctl_text(*args)

    def trial(self, *tables, epsilon=9e6, delta=0.9):
        self.dpqd.ctl("population", "create", "trial", "--unit-type", "integer")
        for t in tables:
            self.create_dataset(t)
        self.dpqd.ctl("budget", "set", "trial", "--epsilon", epsilon, "--delta", delta)

    def sql_value(self, statement):
        rows = self.dpqd.ctl("sql", statement)["rows"]
        self.assertEqual(len(rows), 1, statement)
        return rows[0][0]

    def test_population_commands_in_text_and_json(self):
        text = self.dpqd.ctl_text("population", "create", "trial", "--unit-type", "integer")
        self.assertIn("population 'trial': people identified by integer values", text)
        self.assertIn("datasets:   none", text)
        other = self.dpqd.ctl("population", "create", "codes", "--unit-type", "text")
        self.assertEqual((other["name"], other["unit_type"], other["datasets"], other["dropped"]),
                         ("codes", "text", [], False))
        self.assertEqual(other["budget"]["epsilon_total"], 0.0)
        self.assert_error(self.dpqd.ctl("population", "create", "trial", "--unit-type", "integer",
                                        check=False), "ALREADY_EXISTS", "trial")

        self.assertIn("population:    trial", self.create_dataset("patients", text=True))
        self.create_dataset("death")
        self.assertIn("public table:", self.create_regimens())
        # A unit of another type than the population's, an unknown population, a public table
        # in a population: refused, nothing created.
        r = self.dpqd.ctl(*self.dataset_args("recurrence", "codes"), check=False)
        self.assert_error(r, "INVALID_ARGUMENT", ["patient_id", "codes", "text"])
        r = self.dpqd.ctl(*self.dataset_args("recurrence", "nope"), check=False)
        self.assert_error(r, "NOT_FOUND", "nope")
        r = self.dpqd.ctl(*self.dataset_args("recurrence"), "--public", check=False)
        self.assert_error(r, "INVALID_ARGUMENT", "--public")
        self.assertNotIn("recurrence",
                         [d["name"] for d in self.dpqd.ctl("dataset", "list")["datasets"]])

        listed = {p["name"]: p for p in self.dpqd.ctl("population", "list")["populations"]}
        self.assertEqual(set(listed), {"trial", "codes"})
        self.assertEqual(listed["trial"]["datasets"], ["death", "patients"])
        self.assertEqual(listed["trial"]["unit_type"], "integer")
        self.assertEqual(listed["codes"]["datasets"], [])
        lines = {line.split()[0]: line.split()
                 for line in self.dpqd.ctl_text("population", "list").splitlines()[1:] if line}
        self.assertEqual(lines["trial"][:3], ["trial", "integer", "death,patients"])
        self.assertEqual(lines["codes"][:3], ["codes", "text", "-"])

        shown = self.dpqd.ctl("population", "show", "trial")
        self.assertEqual(shown["datasets"], ["death", "patients"])  # regimens belongs to none
        self.assertIn("datasets:   death, patients",
                      self.dpqd.ctl_text("population", "show", "trial"))
        self.assert_error(self.dpqd.ctl("population", "show", "nope", check=False), "NOT_FOUND")

        # drop: refused while a dataset lives, then done; the dropped population stays listed.
        r = self.dpqd.ctl("population", "drop", "trial", check=False)
        self.assert_error(r, "FAILED_PRECONDITION", ["trial", "dataset drop"])
        self.dpqd.ctl("dataset", "drop", "death", "--yes")
        self.assert_error(self.dpqd.ctl("population", "drop", "trial", check=False),
                          "FAILED_PRECONDITION", "patients")
        self.dpqd.ctl("dataset", "drop", "patients", "--yes")
        self.assertIn("dropped population 'trial'",
                      self.dpqd.ctl_text("population", "drop", "trial"))
        self.assertEqual(self.dpqd.ctl("population", "drop", "codes"), {"dropped": True})
        listed = {p["name"]: p for p in self.dpqd.ctl("population", "list")["populations"]}
        self.assertTrue(listed["trial"]["dropped"] and listed["codes"]["dropped"])
        self.assertIn("trial (dropped)", self.dpqd.ctl_text("population", "list"))
        self.assertEqual(self.dpqd.ctl("population", "show", "trial")["datasets"], [])

    def test_every_dataset_of_a_population_draws_from_one_budget(self):
        self.trial("patients", "death", epsilon=3, delta=1e-6)
        text = self.dpqd.ctl_text("budget", "show", "death")
        self.assertIn("dataset 'death' belongs to population 'trial'", text)
        shown = self.dpqd.ctl("budget", "show", "death")
        self.assertEqual((shown["population"], shown["via_dataset"]), ("trial", "death"))
        self.assertEqual(shown["epsilon_total"], 3.0)

        self.dpqd.ctl("sql", dp("epsilon = 0.5") + "COUNT(*) FROM patients")
        self.dpqd.ctl("query", "death", "--aggregate", "count", "--epsilon", 0.25)
        for name in ("trial", "patients", "death"):
            budget = self.dpqd.ctl("budget", "show", name)
            self.assert_close(budget["epsilon_spent"], 0.75, msg=name)
            self.assert_close(budget["epsilon_remaining"], 3 - 0.75, msg=name)
        self.assertRegex(self.dpqd.ctl_text("budget", "show", "patients"),
                         r"epsilon\s+3\.0\s+0\.75\s+2\.25")
        entries = self.dpqd.ctl("audit", "trial")["entries"]
        self.assertEqual([e["datasets"] for e in entries], ["patients", "death"])
        self.assertEqual(len(self.dpqd.ctl("audit", "death")["entries"]), 2)
        # What is left (2.25) is left for either dataset: 2.5 on one of them is refused.
        self.assert_error(self.dpqd.ctl("query", "patients", "--aggregate", "count", "--epsilon",
                                        2.5, check=False), "RESOURCE_EXHAUSTED")
        self.dpqd.ctl("query", "death", "--aggregate", "count", "--epsilon", 2.25)
        self.assert_close(self.dpqd.ctl("budget", "show", "trial")["epsilon_remaining"], 0.0,
                          tol=1e-9)

    def test_join_refusals_charge_nothing(self):
        self.trial("patients", "death")
        self.create_regimens()
        self.create_slid(self.dpqd)
        self.dpqd.ctl("budget", "set", "slid", "--epsilon", 10, "--delta", 1e-6)
        self.dpqd.ctl("sql", dp() + "COUNT(*) FROM patients p JOIN death d USING (patient_id)")
        before = {n: self.snapshot(self.dpqd, n) for n in ("trial", "slid")}
        refusals = [
            (dp() + "COUNT(*) FROM slid s JOIN patients p ON s.person_id = p.patient_id",
             "belong to populations"),
            (dp() + "COUNT(*) FROM patients p JOIN slid s ON p.patient_id = s.person_id",
             "belong to populations"),
            (dp() + "COUNT(*) FROM patients p JOIN death d ON p.age = d.time", "privacy units"),
            (dp() + "SUM(d.time) FROM patients p JOIN death d ON p.patient_id = d.status",
             "privacy units"),
            (dp() + "COUNT(*) FROM regimens", "public table"),
            (dp() + "COUNT(*) FROM regimens a JOIN regimens b USING (rx)", "only ever joined"),
        ]
        for statement, message in refusals:
            with self.subTest(statement=statement):
                r = self.dpqd.ctl("sql", statement, check=False)
                self.assert_error(r, "INVALID_ARGUMENT", message)
                r = self.dpqd.ctl("sql", statement, "--explain", check=False)
                self.assert_error(r, "INVALID_ARGUMENT", message)
        r = self.dpqd.ctl("query", "regimens", "--aggregate", "count", "--epsilon", 1, check=False)
        self.assert_error(r, "INVALID_ARGUMENT", "public table")
        self.assertEqual({n: self.snapshot(self.dpqd, n) for n in before}, before)

    def test_bounding_applies_to_the_joined_rows(self):
        # Patient 61 has 5 visits and 5 doses: 25 joined rows.
        self.trial("visits", "doses")
        pair = "FROM visits v JOIN doses o USING (patient_id) WHERE v.patient_id = 61"
        self.assertEqual(self.sql_value(
            dp() + "COUNT(*, contribution_bounds_per_group => (0, 30)) " + pair), 25)
        for k in (1, 3):
            self.assertEqual(self.sql_value(
                dp("epsilon = 1e6, max_rows_contributed = %d" % k) + "COUNT(*) " + pair), k)
        self.assertEqual(self.sql_value(dp() + "COUNT(*) " + pair), 1)
        # Every unit once: 61 patients, whatever their joined rows (up to 12, and 25).
        self.assertEqual(self.sql_value(
            dp("epsilon = 1e6, max_rows_contributed = 1") +
            "COUNT(*) FROM visits JOIN doses USING (patient_id)"), 61)
        # A per-row sum keeps K joined rows of patient 61 (all scoring 7.5).
        self.assertAlmostEqual(self.sql_value(
            dp("epsilon = 1e6, max_rows_per_group = 4") +
            "SUM(v.score, contribution_bounds_per_row => (0, 10)) " + pair), 4 * 7.5, delta=1e-2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
