#!/usr/bin/python3
"""End-to-end neighbour-differential suite across the datasets of one population (the
comparator, the views and the grid runner are neighbour_compare.py's).

Per side a population of three datasets (people A, visits B, prescriptions C) and, for D', one more
person with rows in ALL of them (plain values; values outside the bounds, near DBL_MAX, NULL and
keys found nowhere else; many rows on every side), plus a public lookup table and a dataset of
another population shared by every side. The same grid runs on each: joins (USING, ON, the lookup
table, grouped by declared, WHERE-stated and selected keys, filtered, 3-way, a script), each
dataset alone (SQL and flag queries), a replay, a cached repeat and bob's release, --explain, and
refusals (a join not on the units, through the public table, across populations, an outer join, a
repeated alias, a public table alone, a script of two tables); then the population's one budget and
audit chain. The side's names are written {P}, {A}, {B}, {C} in every observable before the
comparison (they differ by construction).
"""

import os
import random
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from neighbour_compare import (  # noqa: E402
    AUDIT_FIELDS, Context, NAME_KEYS, Step, _short, answer_view, ctl_view, differences, flat,
    query_flags, run_grids, sql_view)
from neighbour_test import (  # noqa: E402
    ADDED, BASE_UNITS, BUDGET_DELTA, BUDGET_EPS, MAX_SHOWN_DIFFERENCES, WIDE, dp_select,
    sql_query, with_privacy)

# ---------------------------------------------------------------------------------------------
# A neighbour pair across the datasets of one population: the added person has rows in each
# ---------------------------------------------------------------------------------------------

# Per side (D, and each D'): a population P holding people A (one row or more per unit), visits B
# and prescriptions C, all keyed by pid; one public lookup table and one dataset of another
# population are shared by every side. The names differ between sides by construction (admin
# declarations, not data), so every observable is compared with them written as {P}, {A}, {B}, {C}.
JOIN_ROLES = ("P", "A", "B", "C")
JOIN_COLUMNS = {"A": ["pid", "age", "region", "cat"], "B": ["pid", "cost", "code", "w"],
                "C": ["pid", "dose", "drug"]}
JOIN_TYPES = {"A": ["pid=integer", "age=integer", "region=text", "cat=text"],
              "B": ["pid=integer", "cost=double", "code=text", "w=double"],
              "C": ["pid=integer", "dose=double", "drug=text"]}
JOIN_DECLARED = {"A": ["--bounds", "age=0:100", "--categories", "cat=a|b|c"],
                 "B": ["--bounds", "cost=0:50"], "C": ["--bounds", "dose=0:10"]}
LOOKUP = "jregions"  # public: code, name, income (r0 twice: a public key may repeat)
LOOKUP_ROWS = ["r0,north,100", "r0,north,300", "r1,south,2000", "r2,east,-5", "r3,west,500"]
OTHER = "jother"     # a dataset of a population of its own, for the cross-population refusal


def join_side(index):
    """The names of side `index` (0: D): of one length on every side, so that the positions in
    refusals (line, column) are comparable."""
    return {role: "j%s_%d" % (role.lower(), index) for role in JOIN_ROLES}


def join_base_rows():
    """40 units: one or two rows in A, one to three in B, none to two in C (values inside the
    declared bounds, no NULLs)."""
    rng = random.Random(20261205)
    rows = {"A": [], "B": [], "C": []}
    for pid in range(1, BASE_UNITS + 1):
        for _ in range(rng.randint(1, 2)):
            rows["A"].append([str(pid), str(rng.randint(0, 100)), "r%d" % rng.randint(0, 3),
                              rng.choice("abc")])
        for _ in range(rng.randint(1, 3)):
            rows["B"].append([str(pid), repr(round(rng.uniform(0, 50), 3)),
                              "c%d" % rng.randint(0, 2), repr(round(rng.uniform(-100, 100), 3))])
        for _ in range(rng.randint(0, 2)):
            rows["C"].append([str(pid), repr(round(rng.uniform(0, 10), 3)),
                              "d%d" % rng.randint(0, 2)])
    return rows


def _person(a_rows, b_rows, c_rows):
    return {role: [[str(ADDED)] + r for r in rows]
            for role, rows in (("A", a_rows), ("B", b_rows), ("C", c_rows))}


# The added person's rows in A, B and C (after pid): present in every dataset of the population.
JOIN_VARIANTS = {
    "plain": _person([["37", "r1", "b"]], [["12.5", "c0", "3"], ["40", "c1", "-2"]],
                     [["5", "d0"]]),
    # Outside the bounds, near DBL_MAX, NULL, keys found nowhere else (nor in the lookup table).
    "wild": _person([["1000000", "r_new", "zzz"], ["", "", ""], ["-5", "r0", "a"]],
                    [["1e308", "c_new", "1e308"], ["-1.7976931348623157e308", "", "-1e308"],
                     ["", "c0", ""]],
                    [["1e308", "d_new"], ["-1e308", ""]]),
    # Many rows on every side: 1200 joined rows of A and B, 24000 of A, B and C.
    "many": _person([[str(i % 101), "r%d" % (i % 4), "abc"[i % 3]] for i in range(20)],
                    [[repr(float(i % 51)), "c%d" % (i % 3), repr(float(i))] for i in range(60)],
                    [[repr(float(i % 11)), "d%d" % (i % 3)] for i in range(20)]),
}

J_AB = "FROM {A} a JOIN {B} b USING (pid)"
J_ABC = "FROM {A} a JOIN {B} b USING (pid) JOIN {C} c USING (pid)"
J_LOOKUP = "JOIN %s r ON a.region = r.code" % LOOKUP


def join_sql_queries():
    """Joined statements (USING and ON, the public lookup, grouped, filtered, 3-way, every kind of
    key), single-dataset statements of each member, a script, and refusals."""
    return [
        sql_query("COUNT(*) AS n, SUM(b.cost) AS s, AVG(b.cost) AS m " + J_AB, ["n", "s"]),
        sql_query("COUNT(*) AS n FROM {A} a JOIN {B} b ON a.pid = b.pid", ["n"]),
        sql_query("a.cat, COUNT(*) AS n, SUM(b.cost) AS s %s GROUP BY a.cat" % J_AB, ["n", "s"]),
        sql_query("SUM(b.cost, contribution_bounds_per_row => (0, 20)) AS s %s "
                  "WHERE a.age > 30 AND b.cost < 40" % J_AB, ["s"]),
        sql_query("r.name, COUNT(*) AS n, AVG(b.cost) AS m %s %s GROUP BY r.name"
                  % (J_AB, J_LOOKUP), ["n"], delta=True, selects=True),
        sql_query("COUNT(*) AS n, SUM(r.income) AS s FROM {A} a " + J_LOOKUP, ["n", "s"]),
        sql_query("COUNT(*) AS n, SUM(c.dose) AS s, AVG(b.cost) AS m " + J_ABC, ["n", "s"]),
        sql_query("a.cat, SUM(c.dose) AS s FROM {A} a JOIN {C} c ON a.pid = c.pid JOIN {B} b "
                  "ON b.pid = a.pid WHERE c.drug IN ('d0', 'd1') GROUP BY a.cat", ["s"]),
        sql_query("b.code, COUNT(*) AS n %s GROUP BY b.code" % J_AB, ["n"], delta=True,
                  selects=True),
        sql_query("VAR_POP(b.cost) AS v, PERCENTILE_CONT(a.age, 0.5) AS p " + J_AB),
        sql_query("SUM(b.w, contribution_bounds_per_group => %s) AS s, COUNT(*, "
                  "contribution_bounds_per_group => (0, 3)) AS n %s" % (WIDE, J_ABC), ["s", "n"]),
        sql_query("COUNT(*) AS n " + J_AB, ["n"], delta=True, extra=", mechanism = 'gaussian'"),
        sql_query("COUNT(*) AS n, SUM(b.cost) AS s %s %s WHERE r.income > 200" % (J_AB, J_LOOKUP),
                  ["n", "s"]),
        sql_query("r.name, COUNT(*) AS n %s %s WHERE r.name IN ('north', 'east', 'nowhere') "
                  "GROUP BY r.name" % (J_AB, J_LOOKUP), ["n"]),
        # Each member alone: the same population's ledger.
        sql_query("COUNT(*) AS n, AVG(age) AS m FROM {A}", ["n"]),
        sql_query("cat, COUNT(*) AS n FROM {A} GROUP BY cat", ["n"]),
        sql_query("SUM(cost) AS s, COUNT(*) AS n FROM {B}", ["s", "n"]),
        sql_query("SUM(dose) AS s FROM {C} WHERE drug = 'd1'", ["s"]),
        # A script: two statements of the same join, one charge.
        {"sql": dp_select("COUNT(*) AS n " + J_AB) + "; " + dp_select("AVG(a.age) AS m " + J_AB),
         "half_width": {"n"}, "selects": False},
        # Refused on every side, before any charge.
        {"sql": dp_select("COUNT(*) AS n " + J_AB) + "; " + dp_select("SUM(dose) AS s FROM {C}"),
         "half_width": {"n", "s"}, "selects": False},
        sql_query("COUNT(*) AS n FROM {A} a JOIN {B} b ON a.region = b.code", ["n"]),
        sql_query("COUNT(*) AS n FROM %s" % LOOKUP, ["n"]),
        sql_query("SUM(b.w) AS s " + J_AB, ["s"]),
        sql_query("COUNT(*) AS n FROM {A} a JOIN %s o ON a.pid = o.pid" % OTHER, ["n"]),
        sql_query("COUNT(*) AS n FROM {A} a %s JOIN {B} b ON r.code = b.code" % J_LOOKUP, ["n"]),
        sql_query("COUNT(*) AS n FROM {A} a LEFT JOIN {B} b USING (pid)", ["n"]),
        sql_query("COUNT(*) AS n FROM {A} a JOIN {B} a USING (pid)", ["n"]),
    ]


JOIN_SQL_REFUSED = tuple(range(19, 27))
JOIN_SQL_EXPLAINED = (0, 4, 6, 7, 12, 13, 20, 23)

# Flag queries of each member alone (role, query).
JOIN_FLAG_QUERIES = [
    ("A", with_privacy({"aggregate": "count", "max_contributions": 2}, "laplace")),
    ("A", with_privacy({"aggregate": "mean", "column": "age", "group_by": ["cat"]}, "laplace")),
    ("B", with_privacy({"aggregate": "sum", "column": "cost", "max_contributions": 3}, "gaussian")),
    ("B", with_privacy({"aggregate": "histogram", "column": "cost", "bins": [0, 25, 50]},
                       "laplace")),
    ("C", with_privacy({"aggregate": "sum", "column": "dose", "per_unit": True}, "laplace")),
    ("C", with_privacy({"aggregate": "count", "where": "drug = 'd1' OR dose > 5"}, "laplace")),
]


def unname(value, side):
    """`value` with the side's dataset and population names written as {P}, {A}, {B}, {C} (or
    whatever roles the side has: the time-block suite's are P, D, L)."""
    if isinstance(value, str):
        for role, name in side.items():
            value = re.sub(r"\b%s\b" % re.escape(name), "{%s}" % role, value)
        return value
    if isinstance(value, list):
        return [unname(v, side) for v in value]
    if isinstance(value, tuple):
        return tuple(unname(v, side) for v in value)
    if isinstance(value, dict):
        return {k: unname(v, side) for k, v in value.items()}
    return value


def _named(text, side):
    for role in JOIN_ROLES:
        text = text.replace("{%s}" % role, side[role])
    return text


def join_sql_step(s, request_id, analyst="alice"):
    def run(ctx, side):
        result = ctx.ctl(analyst, "sql", _named(s["sql"], side), "--request-id", request_id)
        return ctl_view(result, lambda doc: sql_view(s, doc))

    def describe(side):
        return "[%s] dpqctl sql %r --request-id %s" % (analyst, _named(s["sql"], side), request_id)
    return Step("sql " + request_id, run, describe)


def join_explain_step(s, index):
    def run(ctx, side):
        result = ctx.ctl("alice", "sql", _named(s["sql"], side), "--explain")
        return ctl_view(result,
                        lambda doc: {k: v for k, v in flat(doc).items() if k not in NAME_KEYS})

    def describe(side):
        return "[alice] dpqctl sql %r --explain" % _named(s["sql"], side)
    return Step("explain %d" % index, run, describe)


def join_query_step(role, q, request_id):
    def run(ctx, side):
        result = ctx.ctl("alice", "query", side[role], *query_flags(q), "--request-id", request_id)
        return ctl_view(result, lambda doc: answer_view(q, doc))

    def describe(side):
        return "[alice] dpqctl query %s %s --request-id %s" % (side[role], " ".join(
            query_flags(q)), request_id)
    return Step("query " + request_id, run, describe)


def join_admin_step(label, args_of, drop=()):
    """An admin read of the side (dataset / population show, budget show): all but names."""
    def run(ctx, side):
        result = ctx.dpqd.ctl(*args_of(side), check=False)
        return ctl_view(result, lambda doc: {k: v for k, v in flat(doc).items()
                                             if k.split(".")[-1] not in drop})
    return Step(label, run, lambda side: "dpqctl " + " ".join(args_of(side)))


def build_join_steps():
    steps = [join_admin_step("show " + role, lambda side, r=role: ("dataset", "show", side[r]),
                             ("created_at",)) for role in "ABC"]
    sqls = join_sql_queries()
    steps += [join_sql_step(s, "js-%02d" % i) for i, s in enumerate(sqls)]
    # A replay (same id), alice's cached repeat (new id), bob's own charged release.
    steps += [join_sql_step(sqls[0], "js-00"), join_sql_step(sqls[0], "js-again-00"),
              join_sql_step(sqls[0], "js-bob-00", analyst="bob")]
    steps += [join_explain_step(sqls[i], i) for i in JOIN_SQL_EXPLAINED]
    steps += [join_query_step(role, q, "jq-%02d" % i) for i, (role, q) in
              enumerate(JOIN_FLAG_QUERIES)]
    steps.append(join_admin_step("population show", lambda side: ("population", "show", side["P"]),
                                 ("created_at",)))
    steps += [join_admin_step("budget show " + role,
                              lambda side, r=role: ("budget", "show", side[r])) for role in "PB"]
    return steps


def run_join_grid(ctx, side, steps, deadline, audit_fields=AUDIT_FIELDS + ("datasets",)):
    views = []
    for step in steps:
        if time.monotonic() > deadline:
            raise AssertionError("join grid on %s exceeded its time limit after %d of %d requests" %
                                 (side["P"], len(views), len(steps)))
        views.append(unname(step.run(ctx, side), side))
    entries = ctx.dpqd.ctl("audit", side["P"])["entries"]
    audit = [unname({k: e.get(k) for k in audit_fields}, side) for e in entries]
    return views, audit


def side_differences(steps, side, base, other):
    """What differs between two sides' (views, audit) from run_join_grid, in words: each step's
    observables, then the audit chain (entries compared but their sequence numbers)."""
    found = []
    for step, a, b in zip(steps, base[0], other[0]):
        for observable, va, vb in differences(a, b):
            found.append("%s\n    observable %s: D=%s  D'=%s" % (
                step.describe(side), observable, _short(va), _short(vb)))
    strip = (lambda e: {k: v for k, v in e.items() if k != "seq"})
    if [strip(e) for e in base[1]] != [strip(e) for e in other[1]]:
        found.append("audit of the population: D=%s\n  D'=%s" % (_short(base[1], 2000),
                                                                 _short(other[1], 2000)))
    return found


class JoinNeighbourTest(harness.DpqdTestCase):
    """D against D' = D plus one person with rows in every dataset of one population: joins of
    them (and with a public table), each of them alone, replays and plans, and the population's
    one ledger and audit chain; everything but the noisy values must be the same."""

    @classmethod
    def setUpClass(cls):
        started = time.monotonic()
        cls.dpqd = cls.new_class_dpqd()
        cls.dir = cls.make_class_temp_dir()
        tokens = {who: cls.create_analyst(cls.dpqd, who) for who in ("alice", "bob")}
        lookup = os.path.join(cls.dir, LOOKUP + ".csv")
        with open(lookup, "w") as f:
            f.write("code,name,income\n" + "".join(r + "\n" for r in LOOKUP_ROWS))
        cls.dpqd.ctl("dataset", "create", LOOKUP, "--csv", lookup, "--public", "--type",
                     "code=text", "--type", "name=text", "--type", "income=double", "--bounds",
                     "income=0:1000")
        other = os.path.join(cls.dir, OTHER + ".csv")
        with open(other, "w") as f:
            f.write("pid,x\n" + "".join("%d,%d\n" % (pid, pid % 10) for pid in range(1, 21)))
        cls.dpqd.ctl("dataset", "create", OTHER, "--csv", other, "--privacy-unit", "pid",
                     "--type", "pid=integer", "--type", "x=double", "--bounds", "x=0:10")
        cls.dpqd.ctl("budget", "set", OTHER, "--epsilon", BUDGET_EPS)
        base = join_base_rows()
        cls.sides = {v: join_side(i) for i, v in enumerate(["base"] + list(JOIN_VARIANTS))}
        for variant, side in cls.sides.items():
            cls.dpqd.ctl("population", "create", side["P"], "--unit-type", "integer")
            for role in "ABC":
                path = os.path.join(cls.dir, side[role] + ".csv")
                rows = base[role] + (JOIN_VARIANTS[variant][role] if variant != "base" else [])
                with open(path, "w") as f:
                    f.write(",".join(JOIN_COLUMNS[role]) + "\n" +
                            "".join(",".join(r) + "\n" for r in rows))
                args = ["dataset", "create", side[role], "--csv", path, "--population", side["P"],
                        "--privacy-unit", "pid"]
                for t in JOIN_TYPES[role]:
                    args += ["--type", t]
                cls.dpqd.ctl(*args, *JOIN_DECLARED[role])
                for who in tokens:
                    cls.dpqd.ctl("grant", who, side[role])
            cls.dpqd.ctl("budget", "set", side["P"], "--epsilon", BUDGET_EPS, "--delta",
                         BUDGET_DELTA)
        for who in tokens:
            cls.dpqd.ctl("grant", who, OTHER)
        cls.steps = build_join_steps()
        cls.ctx = Context(cls.dpqd, tokens)
        cls.addClassCleanup(cls.ctx.close)
        cls.results, cls.grid_errors = run_grids(run_join_grid, cls.ctx, cls.sides, cls.steps)
        sys.stderr.write("[neighbour joins] %d populations x %d requests in %.0f s\n" % (
            len(cls.sides), len(cls.steps), time.monotonic() - started))

    def _results(self, variant):
        if variant in self.grid_errors:
            raise self.grid_errors[variant]
        return self.results[variant]

    def compare_with_base(self, variant):
        side = self.sides[variant]
        audit = self._results(variant)[1]
        found = side_differences(self.steps, side, self._results("base"), self._results(variant))
        sys.stderr.write("[neighbour joins] %s: %d requests, %d audit rows, %d differences\n" % (
            variant, len(self.steps), len(audit), len(found)))
        if found:
            self.fail("%d observable(s) differ between D (population %s) and D' (%s: D + one "
                      "person with rows in %s):\n%s" % (
                          len(found), self.sides["base"]["P"], side["P"],
                          ", ".join(side[r] for r in "ABC"),
                          "\n".join(found[:MAX_SHOWN_DIFFERENCES])))

    def test_join_neighbour_plain_person_in_every_dataset(self):
        self.compare_with_base("plain")

    def test_join_neighbour_wild_values_and_unknown_keys_in_every_dataset(self):
        self.compare_with_base("wild")

    def test_join_neighbour_many_rows_in_every_dataset(self):
        self.compare_with_base("many")

    def test_join_grid_answers_refusals_and_one_ledger(self):
        """On D the statements answer but the refusals, which are INVALID_ARGUMENT (UNIMPLEMENTED
        for an outer join) and charge nothing; every charge of any member or join is one row of the
        population's one audit chain, and the ledger spent is their sum."""
        views, audit = self._results("base")
        by_label = {s.label: v for s, v in zip(self.steps, views)}
        n = len(join_sql_queries())
        wrong = ["js-%02d: %s" % (i, by_label["sql js-%02d" % i].get("error.message", "answered"))
                 for i in range(n)
                 if (by_label["sql js-%02d" % i].get("exit") == 0) == (i in JOIN_SQL_REFUSED)]
        wrong += ["jq-%02d: %s" % (i, by_label["query jq-%02d" % i].get("error.message"))
                  for i in range(len(JOIN_FLAG_QUERIES))
                  if by_label["query jq-%02d" % i].get("exit") != 0]
        self.assertEqual(wrong, [], "statements on D that did not answer (or should have been "
                                    "refused)")
        codes = {by_label["sql js-%02d" % i].get("error.code") for i in JOIN_SQL_REFUSED}
        self.assertEqual(codes, {"INVALID_ARGUMENT", "UNIMPLEMENTED"})
        charged = {e["request_id"] for e in audit}
        self.assertFalse(charged & {"js-%02d" % i for i in JOIN_SQL_REFUSED})
        self.assertTrue({"js-%02d" % i for i in range(n) if i not in JOIN_SQL_REFUSED} <= charged)
        self.assertTrue({"jq-%02d" % i for i in range(len(JOIN_FLAG_QUERIES))} <= charged)
        self.assertNotIn("js-again-00", charged)
        self.assertIn("js-bob-00", charged)
        self.assertEqual({e["datasets"] for e in audit if e["request_id"] == "js-06"},
                         {"{A},{B},{C}"})
        budget = by_label["budget show P"]
        self.assertAlmostEqual(budget["epsilon_spent"], sum(e["epsilon"] for e in audit),
                               delta=1e-9 * BUDGET_EPS)
        self.assertEqual(by_label["budget show B"]["epsilon_spent"], budget["epsilon_spent"])
        # Names are unwritten whole, and only the side's own.
        side = self.sides["plain"]
        self.assertEqual(unname("%s.pid, %s0, %s, jp_x" % (side["A"], side["B"], LOOKUP), side),
                         "{A}.pid, %s0, %s, jp_x" % (side["B"], LOOKUP))


if __name__ == "__main__":
    unittest.main()
