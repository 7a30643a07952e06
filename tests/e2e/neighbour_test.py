#!/usr/bin/python3
"""End-to-end neighbour-differential suite: nothing an analyst observes may depend on the
data except the released noisy values.

For a base dataset D and, per adversarial variant, a neighbour D' = D plus ONE privacy unit (NULL in
every column, values near +-1e308, NaN/+-inf, values far outside the declared bounds, an undeclared
group key, 500 rows, the NULL unit, rows of huge values whose per-unit sum overflows float8, tiny
and subnormal values, all zeros, 2000 rows of 1e308), the same generated grid of requests runs on D
and on every D' as the same analyst, in the same order, with the same request ids:
  * single queries (itertools.product of aggregate, mechanism, K, grouping; and of aggregate,
    column, clamp bounds, --where filter), every aggregate, declared keys/categories and DP
    partition selection, extreme explicit bounds (1e15, 1e16 and the overflow probe,
    L = DBL_MAX / (n - 1/2) with n the neighbour's number of kept rows);
  * `dpqctl query-batch`, `dpqctl plan`, replays (same --request-id), repeats (the result cache)
    and the same questions from a second analyst;
  * `dpqctl sql` forms of the same questions: per-unit SUM / AVG (declared bounds and explicit
    contribution_bounds_per_group up to 1e15), row-clamped SUM, VAR_POP, STDDEV_POP (also with
    bounds of 1e-147) and PERCENTILE_CONT, per-unit COUNT, GROUP BY declared categories, keys
    stated by WHERE, selected keys and WIDTH_BUCKET, dates (DATE literals, DATE_TRUNC buckets),
    a script of two statements, refusals; a
    replay, a cached repeat and bob's release of one; `dpqctl sql --explain` of some;
  * `dpqctl query --per-unit` (count, sum, mean; grouped and not; extreme bounds), the first two
    being the flag twins of SQL statements asked before them (cached answers);
  * through gRPC (the Python stubs), inputs that dpqctl refuses itself: NaN and infinite bounds,
    bins, quantiles, epsilon, delta, confidence.
Every observable except the noisy values is compared: exit code, error code and message, mechanism,
epsilon/delta charged and the budget after, noise scales, sensitivity, K, M, clamp bounds, interval
confidence and (count, sum, histogram: data-independent) half-width, the number, keys and labels of
rows for declared keys and bins, rank errors, cached/replayed flags, warnings, request ids, plans,
the SQL result's columns, row count and public keys, the schema the analyst sees, and at the end the
audit trail (which requests were charged what).
A difference fails the variant's test, naming the request (its argv) and the observable.

The pair across the datasets of one population is neighbour_join_test.py.

Also here: the two regression tests (the overflow probe on n-1 and n kept rows; the NULL unit and
the bounding method), the all-or-nothing refusal of 2.5 in a declared integer column,
the per-analyst result cache (for flag and SQL questions), and two scans that once failed on one
neighbour only: a per-unit SUM / AVG on D and on D plus a unit with two rows of u = 1e308 (the raw
per-unit total overflows float8), and a variance over bounds (-1e-147, 1.0000000000000001e-147) on
a row holding exactly 0 against one holding 5 (squares underflow float8); both must now answer on
both sides with the same charge.

Sized for two busy cores: ~365 requests per dataset (~45 of them SQL, --explain and --per-unit),
12 datasets (11 loaded: the loader refuses NaN), run 3 datasets at a time; every loop is bounded in
count and the whole grid by GRID_TIME_LIMIT_S.
"""

import datetime
import itertools
import json
import math
import os
import random
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from neighbour_compare import (  # noqa: E402
    AUDIT_FIELDS, Context, _GRPC_IMPORT_ERROR, _number, _short, answer_view, batch_step,
    differences, explain_step, grpc_step, plan_step, query_step, run_grid, run_grids,
    selects_keys, show_step, sql_step, sql_view)

DBL_MAX = sys.float_info.max
EPS = 1e3          # high epsilon: the noise never matters (and is never compared anyway)
DELTA = 1e-6       # per query, where a delta is needed (Gaussian, partition selection)
BUDGET_EPS = 9e6   # the largest ledger: nothing is refused for budget
BUDGET_DELTA = 0.5
MAX_SHOWN_DIFFERENCES = 25

COLUMNS = ["pid", "x", "n", "cat", "grp", "u", "day"]
TYPES = {"pid": "integer", "x": "double", "n": "integer", "cat": "text", "grp": "text",
         "u": "double", "day": "date"}
DECLARED = ["--bounds", "x=0:100", "--bounds", "n=0:50", "--categories", "cat=a|b|c",
            "--bounds", "day=2026-01-01:2026-03-31"]
# The added unit's dates, row by row in turn: the years' extremes, NULL, inside, just outside.
NEIGHBOUR_DAYS = ["0001-01-01", "9999-12-31", "", "2026-02-15", "2025-12-31", "2026-04-01"]
BASE_UNITS = 40
ADDED = 1000000  # pid of the added unit

# The overflow probe: with K = 1, D keeps BASE_UNITS rows and a neighbour with one more
# unit keeps BASE_UNITS + 1; n * L overflows a float8 sum, (n - 1) * L does not.
PROBE_N = BASE_UNITS + 1
PROBE_L = DBL_MAX / (PROBE_N - 0.5)
PROBE = (PROBE_L, math.nextafter(PROBE_L, math.inf))


def create_args(name, csv_path):
    """dpqctl dataset create with a declared type for EVERY column (the CLI will require it)."""
    args = ["dataset", "create", name, "--csv", csv_path, "--privacy-unit", "pid"]
    for column in COLUMNS:
        args += ["--type", "%s=%s" % (column, TYPES[column])]
    return args + DECLARED


def base_rows():
    """40 units with 1..4 rows each, values inside the declared bounds, no NULLs (so that a NULL
    added by a neighbour is the only one)."""
    rng = random.Random(20240611)
    rows = []
    for pid in range(1, BASE_UNITS + 1):
        for _ in range(rng.randint(1, 4)):
            rows.append([str(pid), repr(round(rng.uniform(0, 100), 3)), str(rng.randint(0, 50)),
                         rng.choice("abc"), "g%d" % rng.randint(0, 3),
                         repr(round(rng.uniform(-1000, 1000), 3)),
                         str(datetime.date(2026, 1, 1) + datetime.timedelta(rng.randint(0, 89)))])
    return rows


def _with_days(rows):
    """A variant's rows with a date each (NULL where the row is all NULL)."""
    return [r + ["" if all(v == "" for v in r[1:]) else NEIGHBOUR_DAYS[i % len(NEIGHBOUR_DAYS)]]
            for i, r in enumerate(rows)]


def _unit(*rows):
    return [[str(ADDED)] + list(r) for r in rows]


# The adversarial unit of each neighbour (columns x, n, cat, grp, u after the unit id).
VARIANTS = {
    "nulls": _unit(["", "", "", "", ""], ["", "", "", "", ""], ["", "", "", "", ""]),
    "huge": _unit(["1.7976931348623157e308", "9223372036854775807", "a", "g0", "-1.7976931348623157e308"],
                  ["-1e308", "-9223372036854775808", "b", "g1", "1e308"],
                  ["1e308", "9223372036854775807", "c", "g2", "1.7e308"]),
    "nonfinite": _unit(["NaN", "1", "a", "g0", "inf"], ["inf", "2", "b", "g1", "-inf"],
                       ["-inf", "3", "c", "g2", "NaN"]),
    "outside": _unit(["1000000", "1000000", "a", "g0", "1e20"], ["-1000000", "-7", "b", "g3", "-1e20"],
                     ["150.5", "51", "c", "g1", "1e15"]),
    "newkey": _unit(["50", "25", "zzz", "brand_new_key", "5"], ["60", "30", "zzz", "brand_new_key", "6"],
                    ["70", "35", "a", "another_new_key", "7"]),
    "many": _unit(*[[repr(float(i % 101)), str(i % 51), "abc"[i % 3], "g%d" % (i % 4),
                     repr(float(i * 37 % 2001 - 1000))] for i in range(500)]),
    # The unit whose id is NULL (all NULL-unit rows form one unit): D has none.
    "nullunit": [["", "100", "50", "a", "g0", "999"], ["", "0", "0", "b", "g1", "-999"],
                 ["", "", "", "", "", ""]],
    # Several rows of huge finite values in the same groups: a per-unit sum of the raw values
    # (before its clamp to [L, U]) overflows float8, in x, in u, per cat and per grp.
    "hugesum": _unit(["1e308", "50", "a", "g0", "1e308"],
                     ["1.7976931348623157e308", "9223372036854775807", "a", "g0",
                      "1.7976931348623157e308"],
                     ["1e308", "40", "a", "g0", "1e308"], ["-1e308", "0", "b", "g1", "-1e308"],
                     ["-1.7976931348623157e308", "1", "b", "g1", "-1.7976931348623157e308"]),
    # Tiny values: 1e-200 (its square underflows), the smallest subnormal and a negative one.
    "tiny": _unit(["1e-200", "1", "a", "g0", "1e-200"],
                  ["4.9406564584124654e-324", "0", "b", "g1", "4.9406564584124654e-324"],
                  ["-1e-200", "0", "c", "g2", "-1e-200"]),
    # Every value exactly 0 (a clamp to bounds that exclude 0, a variance of zeros).
    "zeros": _unit(["0", "0", "a", "g0", "0"], ["0", "0", "b", "g1", "0"],
                   ["0", "0", "a", "g0", "0"]),
    # 2000 rows of u = 1e308: K clamps rows, but a per-unit sum sees all 2000 before its clamp.
    "manyhuge": _unit(*[[repr(float(i % 101)), str(i % 51), "abc"[i % 3], "g%d" % (i % 4), "1e308"]
                        for i in range(2000)]),
}


VARIANTS = {name: _with_days(rows) for name, rows in VARIANTS.items()}


def write_csv(path, rows):
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for r in rows:
            f.write(",".join(r) + "\n")


# ---------------------------------------------------------------------------------------------
# The generated request grid
# ---------------------------------------------------------------------------------------------

AGG_SPECS = [
    {"aggregate": "count"},
    {"aggregate": "sum", "column": "x"},
    {"aggregate": "mean", "column": "x"},
    {"aggregate": "variance", "column": "x"},
    {"aggregate": "stddev", "column": "n"},
    {"aggregate": "quantile", "column": "x", "quantiles": [0.5]},
    # more than 5 levels: all of epsilon on the histogram, values read off its CDF
    {"aggregate": "quantile", "column": "n", "quantiles": [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]},
    {"aggregate": "histogram", "column": "x", "bins": [0, 10, 50, 100]},
    {"aggregate": "histogram", "column": "cat"},   # declared categories
    {"aggregate": "histogram", "column": "grp"},   # undeclared: partition selection
]
MECHANISMS = ["laplace", "gaussian"]
GROUPINGS = [
    {},
    {"group_by": ["cat"]},                                       # declared categories
    {"group_by": ["grp"], "keys": ["g0", "g1", "g2", "nokey"]},  # declared keys
    {"group_by": ["grp"]},                                       # partition selection
]
MULTI_PARTITION = {"group_by": ["cat", "grp"], "max_partitions": 2}
BOUNDED_AGGS = [{"aggregate": "sum"}, {"aggregate": "mean"},
                {"aggregate": "quantile", "quantiles": [0.25, 0.75]}, {"aggregate": "histogram"}]
BOUND_CHOICES = [None, (0.0, 50.0), (-1e15, 1e15), (-1e16, 1e16), PROBE]
WHERES = ["", "x >= 50 OR (cat IN ('a', 'b') AND n IS NOT NULL)"]
# Dates: every bucket of the declared bounds is a declared key; reads are clamped.
DATE_QUERIES = [
    {"aggregate": "count", "group_by": ["day:week"], "max_partitions": 3},
    {"aggregate": "sum", "column": "x", "group_by": ["day:month"], "max_partitions": 2},
    {"aggregate": "mean", "column": "x", "group_by": ["cat", "day:month"], "max_partitions": 2},
    {"aggregate": "count", "where": "day >= '2026-03-01' OR day IS NULL"},
    {"aggregate": "count", "where": "day BETWEEN '2026-01-01' AND '2026-01-31' AND day != "
     "'2026-01-15'", "group_by": ["day:day"], "max_partitions": 2},
]
DATE_REFUSALS = [
    {"aggregate": "count", "group_by": ["day"]},  # a date is grouped by bucket
    {"aggregate": "count", "where": "day > '2026-02-30'"},  # no such day
]


def with_privacy(q, mechanism):
    q = dict(q, mechanism=mechanism, epsilon=EPS)
    if mechanism == "gaussian" or selects_keys(q):
        q["delta"] = DELTA
    return q


def single_queries():
    queries = []
    for agg, mechanism, k, grouping in itertools.product(AGG_SPECS, MECHANISMS, (1, 3), GROUPINGS):
        if agg["aggregate"] == "quantile" and mechanism == "gaussian" and (k, grouping) != (1, {}):
            continue  # refused (quantiles are pure DP): the refusal is compared once per spec
        queries.append(with_privacy(dict(agg, max_contributions=k, **grouping), mechanism))
    for agg, mechanism in itertools.product(AGG_SPECS[:3], MECHANISMS):
        queries.append(with_privacy(dict(agg, max_contributions=2, **MULTI_PARTITION), mechanism))
    for agg, column, bounds, where in itertools.product(BOUNDED_AGGS, ("x", "u"), BOUND_CHOICES,
                                                        WHERES):
        q = dict(agg, column=column)
        if agg["aggregate"] == "histogram":
            lo, hi = bounds if bounds else (0.0, 100.0)
            mid = lo / 2 + hi / 2
            q["bins"] = [lo, mid, hi] if lo < mid < hi else [lo, hi]
        elif bounds is not None:
            q["lower"], q["upper"] = bounds
        if where:
            q["where"] = where
        queries.append(with_privacy(q, "laplace"))
    for q, mechanism in itertools.product(DATE_QUERIES, MECHANISMS):
        queries.append(with_privacy(dict(q, max_contributions=2), mechanism))
    # Without max_contributions: not among the repeated questions, which must be answered.
    queries += [with_privacy(q, "laplace") for q in DATE_REFUSALS]
    return queries


def batch_lists():
    """Query lists for query-batch: generated valid lists (with and without a joint delta) and
    lists ending in one extreme-bounds query."""
    items = [with_privacy(dict(agg, max_contributions=k, **grouping), "laplace")
             for agg, k, grouping in itertools.product(
                 [AGG_SPECS[i] for i in (0, 1, 2, 5, 7)], (1, 3),
                 [{}, {"group_by": ["cat"]}, {"group_by": ["grp"]}])]
    chunks = [items[i:i + 6] for i in range(0, len(items), 6)]
    batches = [(chunk, delta) for chunk, delta in itertools.product(chunks, (0.0, 1e-5))]
    for agg, bounds in itertools.product(({"aggregate": "sum"}, {"aggregate": "histogram"}),
                                         ((-1e15, 1e15), (-1e16, 1e16), PROBE)):
        q = dict(agg, column="u")
        if agg["aggregate"] == "histogram":
            q["bins"] = list(bounds)
        else:
            q["lower"], q["upper"] = bounds
        batches.append((items[:2] + [with_privacy(q, "laplace")], 0.0))
    return batches


def plan_queries():
    plans = []
    for agg, mode in itertools.product(AGG_SPECS, (("--epsilon", 1.0), ("--target-error", 50.0))):
        if mode[0] == "--target-error" and agg["aggregate"] not in ("count", "sum", "mean"):
            continue  # a bisection over epsilon: as data-blind as the --epsilon plan of the same spec
        q = dict(with_privacy(agg, "laplace"))
        del q["epsilon"]
        plans.append((q, mode))
    for bounds in ((-1e15, 1e15), (-1e16, 1e16), PROBE):
        plans.append(({"aggregate": "sum", "column": "u", "lower": bounds[0], "upper": bounds[1]},
                      ("--epsilon", 1.0)))
    return plans


NAN, INF = float("nan"), float("inf")


def grpc_queries():
    """Inputs dpqctl refuses before sending (non-finite numbers), sent straight over gRPC."""
    queries = []
    for (agg, column), (lo, hi) in itertools.product(
            (("sum", "u"), ("sum", "x"), ("mean", "u"), ("quantile", "u"), ("histogram", "u")),
            ((NAN, 1.0), (-INF, INF), (0.0, INF), (-DBL_MAX, DBL_MAX), (1e15, math.nextafter(1e15, INF)))):
        q = {"aggregate": agg, "column": column, "epsilon": EPS}
        if agg == "histogram":
            q["bins"] = [lo, hi]
        else:
            q["lower"], q["upper"] = lo, hi
        if agg == "quantile":
            q["quantiles"] = [0.5]
        queries.append(q)
    for field, value in itertools.product(("epsilon", "delta", "confidence"), (NAN, INF, -INF)):
        q = {"aggregate": "sum", "column": "x", "epsilon": EPS, "mechanism": "gaussian", "delta": DELTA}
        q[field] = value
        queries.append(q)
    queries += [
        {"aggregate": "quantile", "column": "x", "epsilon": EPS, "quantiles": [NAN]},
        {"aggregate": "histogram", "column": "x", "epsilon": EPS, "bins": [0.0, NAN, 100.0]},
        {"aggregate": "histogram", "column": "x", "epsilon": EPS, "bins": [-INF, 0.0, 100.0]},
        {"aggregate": "count", "epsilon": EPS, "where": "x > 1e309"},
        {"aggregate": "count", "epsilon": EPS, "where": "u < 1.7976931348623157e308"},
        {"aggregate": "sum", "column": "x", "epsilon": EPS, "max_contributions": 2 ** 31 - 1},
    ]
    return queries


def per_unit_queries():
    """Flag queries with --per-unit: each unit's row count, sum or mean per group clamped to
    [--lower, --upper] (SQL's contribution_bounds_per_group), with extreme bounds (the overflow
    probe is refused: above 1e15). The first two are the flag twins of SQL statements run before
    them (one question each: answered from the result cache)."""
    wide = {"lower": -1e15, "upper": 1e15}
    queries = [
        dict(aggregate="sum", column="u", per_unit=True, **wide),
        dict(aggregate="mean", column="u", per_unit=True, **wide),
        dict(aggregate="sum", column="u", per_unit=True, group_by=["cat"], **wide),
        dict(aggregate="mean", column="u", per_unit=True, group_by=["cat"], **wide),
        dict(aggregate="sum", column="u", per_unit=True, group_by=["grp"], **wide),
        dict(aggregate="sum", column="u", per_unit=True, lower=PROBE[0], upper=PROBE[1]),
        dict(aggregate="sum", column="x", per_unit=True),  # the declared bounds
        dict(aggregate="count", per_unit=True, lower=1, upper=3),
        dict(aggregate="count", per_unit=True, lower=1, upper=3, group_by=["cat"]),
    ]
    return [with_privacy(q, "laplace") for q in queries]


TINY = "(-1e-147, 1.0000000000000001e-147)"  # (x - midpoint)^2 underflows for x = 0
WIDE = "(-1e15, 1e15)"
WHERE_KEYS = "WHERE grp IN ('g0', 'g1', 'nokey')"


def dp_select(body, delta=False, extra=""):
    """SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = EPS[, delta = DELTA]) `body`, where
    `body` names the dataset {d}."""
    options = "epsilon = %s" % _number(EPS) + (", delta = %s" % _number(DELTA) if delta else "")
    return "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (%s%s) %s" % (options, extra, body)


def sql_query(body, half_width=(), delta=False, extra="", selects=False):
    """One `dpqctl sql` statement of the grid. half_width: the output columns whose interval
    half-width is data-independent (COUNT, SUM); selects: its GROUP BY keys come from DP partition
    selection (which keys are released is then not compared)."""
    return {"sql": dp_select(body, delta, extra), "half_width": set(half_width), "selects": selects}


def sql_queries():
    """The SQL forms of the grid's questions: per-unit SUM / AVG (declared and explicit bounds,
    extreme ones), row-clamped SUM / VAR_POP / STDDEV_POP / PERCENTILE_CONT, per-unit COUNT, every
    kind of GROUP BY key (declared categories, WHERE-stated keys, selected keys, WIDTH_BUCKET), a
    script of two statements and a refusal (SUM of a column without declared bounds)."""
    d = "FROM {d}"
    return [
        sql_query("SUM(x) AS s, AVG(x) AS a " + d, ["s"]),
        sql_query("SUM(x, contribution_bounds_per_group => (0, 200)) AS s, "
                  "AVG(x, contribution_bounds_per_group => (10, 90)) AS a " + d, ["s"]),
        sql_query("SUM(x, contribution_bounds_per_row => (0, 50)) AS s " + d, ["s"]),
        sql_query("VAR_POP(x, contribution_bounds_per_row => (0, 100)) AS v, "
                  "STDDEV_POP(x, contribution_bounds_per_row => (0, 100)) AS sd " + d),
        sql_query("PERCENTILE_CONT(x, 0.5, contribution_bounds_per_row => (0, 100)) AS m " + d),
        sql_query("COUNT(*, contribution_bounds_per_group => (1, 3)) AS c, COUNT(*) AS n " + d,
                  ["c", "n"]),
        sql_query("SUM(n) AS s, STDDEV_POP(n) AS sd " + d, ["s"]),
        sql_query("cat, COUNT(*) AS n, SUM(x) AS s, AVG(x) AS a %s GROUP BY cat" % d, ["n", "s"]),
        sql_query("grp, COUNT(*) AS n, SUM(x) AS s %s %s GROUP BY grp" % (d, WHERE_KEYS),
                  ["n", "s"]),
        sql_query("grp, COUNT(*) AS n %s GROUP BY grp" % d, ["n"], delta=True, selects=True),
        sql_query("grp, SUM(u, contribution_bounds_per_group => %s) AS s, AVG(x) AS a %s "
                  "GROUP BY grp" % (WIDE, d), ["s"], delta=True, selects=True),
        sql_query("WIDTH_BUCKET(x, 0, 100, 4) AS b, COUNT(*) AS n %s GROUP BY b" % d, ["n"]),
        sql_query("WIDTH_BUCKET(u, -1e15, 1e15, 4) AS b, COUNT(*, contribution_bounds_per_group => "
                  "(0, 3)) AS n %s GROUP BY b" % d, ["n"]),
        # SQL_TWIN and the next: the twins of the first two per-unit flag queries.
        sql_query("SUM(u, contribution_bounds_per_group => %s) AS s %s" % (WIDE, d), ["s"]),
        sql_query("AVG(u, contribution_bounds_per_group => %s) AS a %s" % (WIDE, d)),
        sql_query("SUM(u, contribution_bounds_per_group => (-1e16, 1e16)) AS s, "
                  "AVG(u, contribution_bounds_per_group => (-1e16, 1e16)) AS a " + d, ["s"]),
        sql_query("SUM(u, contribution_bounds_per_group => (%r, %r)) AS s %s" % (PROBE + (d,)),
                  ["s"]),
        sql_query("cat, SUM(u, contribution_bounds_per_group => %s) AS s, AVG(u, "
                  "contribution_bounds_per_group => %s) AS a %s GROUP BY cat" % (WIDE, WIDE, d),
                  ["s"]),
        sql_query("SUM(u, contribution_bounds_per_group => %s) AS s %s WHERE x >= 50 OR "
                  "(cat IN ('a', 'b') AND n IS NOT NULL)" % (WIDE, d), ["s"]),
        sql_query("SUM(u, contribution_bounds_per_group => %s) AS s %s" % (WIDE, d), ["s"],
                  delta=True, extra=", mechanism = 'gaussian'"),
        sql_query("VAR_POP(u, contribution_bounds_per_row => %s) AS v %s" % (TINY, d)),
        sql_query("cat, VAR_POP(u, contribution_bounds_per_row => %s) AS v, STDDEV_POP(u, "
                  "contribution_bounds_per_row => %s) AS sd %s GROUP BY cat" % (TINY, TINY, d)),
        sql_query("PERCENTILE_CONT(u, 0.5, contribution_bounds_per_row => %s) AS m %s" % (WIDE, d)),
        # A script: two statements, one charge.
        {"sql": dp_select("COUNT(*) AS n " + d) + "; " +
                dp_select("AVG(u, contribution_bounds_per_group => %s) AS a %s" % (WIDE, d)),
         "half_width": {"n"}, "selects": False},
        # Refused on every dataset: u has no declared bounds.
        sql_query("SUM(u) AS s " + d, ["s"]),
    ] + sql_expression_queries() + sql_date_queries()


BAND = "CASE WHEN x < 50 THEN 'lo' ELSE 'hi' END"


def sql_expression_queries():
    """Per-row expressions: inside aggregates (bounds derived from x's and n's declared bounds, or
    given), in WHERE (columns against columns, the unbounded u compared bare), as GROUP BY keys (a
    CASE of literals: public keys; a cast: selected keys), key-only selects, and the refusal of the
    unbounded u inside arithmetic, even with bounds given."""
    d = "FROM {d}"
    return [
        sql_query("SUM(x * 2 + n) AS s, AVG(x / (n + 1)) AS a " + d, ["s"]),
        sql_query("COUNT(CASE WHEN x > 50 THEN 1 END) AS c, COUNT(DISTINCT pid) AS d " + d, ["c", "d"]),
        sql_query("%s AS band, COUNT(*) AS n, SUM(x + 1) AS s %s GROUP BY band" % (BAND, d),
                  ["n", "s"]),
        sql_query("COUNT(*) AS n, SUM(IF(u > 0, 1, 0)) AS s %s WHERE x * 2 > n OR u > x" % d,
                  ["n", "s"]),
        sql_query("VAR_POP(x / 3) AS v, PERCENTILE_CONT(ABS(x - 50), 0.5) AS m " + d),
        sql_query("grp %s GROUP BY grp" % d, delta=True, selects=True),
        sql_query("CAST(n AS STRING) AS k, COUNT(*) AS c %s GROUP BY k" % d, ["c"], delta=True,
                  selects=True),
        sql_query("%s AS band %s GROUP BY band" % (BAND, d)),
        sql_query("SUM(COALESCE(LEAST(x, n), 0), contribution_bounds_per_row => (0, 40)) AS s " + d,
                  ["s"]),
        # Refused on every dataset: u has no declared bounds and is read inside arithmetic.
        sql_query("SUM(u + 1, contribution_bounds_per_row => (0, 10)) AS s " + d, ["s"]),
    ]


def sql_date_queries():
    """Dates in SQL, read as the flags read them: DATE literals in WHERE (clamped comparisons,
    BETWEEN, IS NULL), DATE_TRUNC groups (every bucket of the declared bounds, with a category
    too), a key-only select of the buckets, and the refusal of a date selected bare."""
    d = "FROM {d}"
    return [
        sql_query("COUNT(*) AS n, SUM(x) AS s %s WHERE day >= DATE '2026-03-01' OR day IS NULL"
                  % d, ["n", "s"]),
        sql_query("DATE_TRUNC(day, WEEK) AS w, COUNT(*) AS n %s WHERE day BETWEEN "
                  "DATE '2026-01-01' AND DATE '2026-02-15' GROUP BY w" % d, ["n"],
                  extra=", max_groups_contributed = 3"),
        sql_query("cat, DATE_TRUNC(day, MONTH) AS m, AVG(x) AS a, SUM(x) AS s %s GROUP BY cat, m"
                  % d, ["s"], extra=", max_groups_contributed = 2"),
        sql_query("DATE_TRUNC(day, DAY) AS d %s WHERE day <> DATE '2026-01-15' GROUP BY d" % d),
        # Refused on every dataset (at `day`, before the dataset's name): a date is selected as
        # its DATE_TRUNC bucket.
        sql_query("day, COUNT(*) AS n %s GROUP BY DATE_TRUNC(day, DAY)" % d, ["n"]),
    ]


SQL_TWIN = 13            # index in sql_queries() of the SQL twin of per_unit_queries()[0]
# Statements refused on every dataset (bounds above 1e15, no bounds, an unbounded column inside
# arithmetic).
SQL_REFUSED = (15, 16, 24, 34, 39)
PER_UNIT_REFUSED = (5,)     # per_unit_queries() refused on every dataset (the overflow probe)
SQL_EXPLAINED = (0, 5, 10, 11, 13, 15, 20, 21, 25, 27, 29, 36)  # statements also run with --explain


# ---------------------------------------------------------------------------------------------
# Observables
# ---------------------------------------------------------------------------------------------

def build_steps(batch_dir, with_grpc):
    steps = [show_step()]
    singles = single_queries()
    for i, q in enumerate(singles):
        steps.append(query_step(q, "q-%04d" % i))
    for i, (queries, delta) in enumerate(batch_lists()):
        path = os.path.join(batch_dir, "batch-%02d.json" % i)
        with open(path, "w") as f:
            json.dump(queries, f)
        steps.append(batch_step(queries, delta, path, "b-%02d" % i))
    for i, (q, mode) in enumerate(plan_queries()):
        steps.append(plan_step(q, mode, i))
    # Replays, repeats and a second analyst, on queries valid on every dataset (ungrouped count and
    # sum, both mechanisms, both K): the same id replays; a new id from the same analyst is served
    # from the result cache; the same question from bob is his own, charged release.
    repeated = [i for i, q in enumerate(singles)
                if q["aggregate"] in ("count", "sum") and not q.get("group_by")
                and q["mechanism"] == "laplace" and "max_contributions" in q]
    for i in repeated:
        steps.append(query_step(singles[i], "q-%04d" % i))
        steps.append(query_step(singles[i], "again-%04d" % i))
        steps.append(query_step(singles[i], "bob-%04d" % i, analyst="bob"))
    # SQL: every statement; the SQL twin of a flag query again (replayed with its request id,
    # served from the cache with a new one, bob's own release); the plans of some.
    sqls = sql_queries()
    for i, s in enumerate(sqls):
        steps.append(sql_step(s, "s-%02d" % i))
    twin = sqls[SQL_TWIN]
    steps += [sql_step(twin, "s-%02d" % SQL_TWIN), sql_step(twin, "s-again-%02d" % SQL_TWIN),
              sql_step(twin, "s-bob-%02d" % SQL_TWIN, analyst="bob")]
    for i in SQL_EXPLAINED:
        steps.append(explain_step(sqls[i], i))
    # --per-unit flag queries, after the SQL: the first is the SQL twin's (a cached answer).
    for i, q in enumerate(per_unit_queries()):
        steps.append(query_step(q, "pu-%02d" % i))
    if with_grpc:
        for i, q in enumerate(grpc_queries()):
            steps.append(grpc_step(q, "g-%04d" % i))
    steps.append(show_step())
    return steps, repeated


def load_and_run_grid(cls, names, create_extra=()):
    """Loads the datasets `names` (nb_base and nb_<variant>; `create_extra` added to each
    `dataset create`) into cls.dpqd, grants them to alice and bob and runs the whole grid on each,
    setting what compare_with_base reads: cls.created, loaded, steps, results, grid_errors."""
    started = time.monotonic()
    cls.dir = cls.make_class_temp_dir()
    cls.base = base_rows()
    cls.created = {}
    for name in names:
        rows = cls.base + (VARIANTS[name[3:]] if name != "nb_base" else [])
        path = os.path.join(cls.dir, name + ".csv")
        write_csv(path, rows)
        cls.created[name] = cls.dpqd.ctl(*create_args(name, path), *create_extra, check=False)
    cls.loaded = [n for n in names if cls.created[n].returncode == 0]
    assert "nb_base" in cls.loaded, "base dataset not created: %r" % dict(cls.created["nb_base"])
    tokens = {"alice": cls.create_analyst(cls.dpqd, "alice"),
              "bob": cls.create_analyst(cls.dpqd, "bob")}
    for name in cls.loaded:
        cls.dpqd.ctl("budget", "set", name, "--epsilon", BUDGET_EPS, "--delta", BUDGET_DELTA)
        for who in tokens:
            cls.dpqd.ctl("grant", who, name)
    cls.with_grpc = _GRPC_IMPORT_ERROR is None
    batch_dir = os.path.join(cls.dir, "batches")
    os.makedirs(batch_dir)
    cls.steps, cls.repeated = build_steps(batch_dir, cls.with_grpc)
    cls.ctx = Context(cls.dpqd, tokens)
    cls.addClassCleanup(cls.ctx.close)
    cls.results, cls.grid_errors = run_grids(run_grid, cls.ctx, {n: n for n in cls.loaded},
                                             cls.steps)
    base_ok = sum(1 for v in cls.results.get("nb_base", ([],))[0] if v.get("exit", 0) == 0
                  and "error.code" not in v)
    sys.stderr.write("[neighbour] %d datasets x %d requests (%d answered on D) in %.0f s%s\n" % (
        len(cls.loaded), len(cls.steps), base_ok, time.monotonic() - started,
        "" if cls.with_grpc else " (no gRPC stubs: %s)" % _GRPC_IMPORT_ERROR))


class ComparatorTest(unittest.TestCase):

    def test_comparator_flags_every_kind_of_public_difference(self):
        """The comparison itself can fail: synthetic answers that differ in one public observable
        each are caught, and answers that differ only in noisy values or in DP-protected selected
        keys are not."""
        q = {"aggregate": "count", "epsilon": EPS}
        row = {"key": [], "label": "", "value": 10.0, "noise_scale": 0.001, "rank_error": 0.0,
               "interval": {"confidence": 0.95, "lower": 9.9, "upper": 10.1}}
        doc = {"value": 10.0, "mechanism": "laplace", "epsilon": EPS, "delta": 0.0,
               "noise_scale": 0.001, "sensitivity": 1.0, "max_contributions": 1, "cached": False,
               "replayed": False, "warnings": [], "request_id": "r", "max_partitions": 1,
               "budget": {"dataset": "d", "epsilon_spent": 1.0},
               "interval": {"confidence": 0.95, "lower": 9.9, "upper": 10.1}, "rows": [row]}
        base = answer_view(q, doc)
        noisy = json.loads(json.dumps(doc))
        noisy["value"] = noisy["rows"][0]["value"] = 12.0
        noisy["interval"].update(lower=11.9, upper=12.1)
        noisy["rows"][0]["interval"].update(lower=11.9, upper=12.1)
        self.assertEqual(differences(base, answer_view(q, noisy)), [])
        for path, value in ((("noise_scale",), 0.002), (("sensitivity",), 2.0), (("cached",), True),
                            (("budget", "epsilon_spent"), 2.0), (("warnings",), ["w"]),
                            (("interval", "upper"), 10.3), (("rows", 0, "label"), "x"),
                            (("rows", 0, "noise_scale"), 0.002), (("rows",), [])):
            changed = json.loads(json.dumps(doc))
            target = changed
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = value
            self.assertNotEqual(differences(base, answer_view(q, changed)), [], path)
        self.assertNotEqual(differences({"exit": 1, "error.code": "INVALID_ARGUMENT"},
                                        {"exit": 1, "error.code": "INTERNAL"}), [])
        sel = {"aggregate": "count", "group_by": ["grp"], "epsilon": EPS, "delta": DELTA}
        two = dict(doc, rows=[dict(row, key=["g0"]), dict(row, key=["g1"])])
        one = dict(doc, rows=[dict(row, key=["g7"])])
        self.assertEqual(differences(answer_view(sel, two), answer_view(sel, one)), [])
        other_scale = dict(doc, rows=[dict(row, key=["g7"], noise_scale=0.5)])
        self.assertNotEqual(differences(answer_view(sel, two), answer_view(sel, other_scale)), [])

    def test_comparator_flags_public_differences_of_sql_answers(self):
        """The same for `dpqctl sql` answers: the noisy cells may differ, the charge, columns, keys
        (declared), row count, noise scales and (COUNT) half-widths may not."""
        s = sql_query("cat, COUNT(*) AS n FROM {d} GROUP BY cat", ["n"])
        cell = {"noise_scale": 0.001, "interval": {"confidence": 0.95, "lower": 9.9, "upper": 10.1}}
        result = {"columns": [{"name": "cat", "type": "string"}, {"name": "n", "type": "int64"}],
                  "rows": [["a", 10], ["b", 12]], "noise": [[None, cell], [None, cell]]}
        doc = {"epsilon": EPS, "delta": 0.0, "epsilon_sum": EPS, "delta_sum": 0.0, "cached": False,
               "replayed": False, "request_id": "s", "budget": {"epsilon_spent": 1.0},
               "results": [result]}
        base = sql_view(s, doc)
        noisy = json.loads(json.dumps(doc))
        noisy["results"][0]["rows"] = [["a", 11], ["b", 13]]
        noisy["results"][0]["noise"][0][1]["interval"].update(lower=10.9, upper=11.1)
        self.assertEqual(differences(base, sql_view(s, noisy)), [])
        for path, value in ((("epsilon",), 2 * EPS), (("cached",), True),
                            (("results", 0, "rows", 1, 0), "c"),
                            (("results", 0, "rows"), [["a", 10]]),
                            (("results", 0, "noise"), [[None, cell]]),
                            (("results", 0, "columns", 1, "name"), "m"),
                            (("results", 0, "noise", 1, 1, "noise_scale"), 0.002),
                            (("results", 0, "noise", 1, 1, "interval"),
                             {"confidence": 0.95, "lower": 9.0, "upper": 11.0}),
                            (("results",), [])):
            changed = json.loads(json.dumps(doc))
            target = changed
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = value
            self.assertNotEqual(differences(base, sql_view(s, changed)), [], path)
        # Keys selected from the data: which keys (and how many) is not compared.
        selected = sql_query("grp, COUNT(*) AS n FROM {d} GROUP BY grp", ["n"], delta=True,
                             selects=True)
        fewer = json.loads(json.dumps(doc))
        fewer["results"][0].update(rows=[["g7", 3]], noise=[[None, cell]])
        self.assertEqual(differences(sql_view(selected, doc), sql_view(selected, fewer)), [])


class NeighbourTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        load_and_run_grid(cls, ["nb_base"] + ["nb_" + v for v in VARIANTS])

    # -- the neighbour comparisons ----------------------------------------------------------

    def compare_with_base(self, variant):
        name = "nb_" + variant
        created = self.created[name]
        if created.returncode != 0:
            # Refused at load: nothing of it reaches an analyst (an admin-only, all-or-nothing
            # refusal before any query), so there is no neighbour to compare.
            self.assert_error(created, "INVALID_ARGUMENT")
            self.assert_error(self.dpqd.ctl("dataset", "show", name, check=False), "NOT_FOUND")
            self.skipTest("the loader refuses this unit (%s): no neighbour dataset to compare" %
                          created.error_message)
        for dataset in ("nb_base", name):
            if dataset in self.grid_errors:
                raise self.grid_errors[dataset]
        if not self.with_grpc and os.environ.get("DPQ_PYTHON_STUBS"):
            self.fail("gRPC stubs promised by DPQ_PYTHON_STUBS but not importable: %s" %
                      _GRPC_IMPORT_ERROR)
        base_views, base_audit, base_budget = self.results["nb_base"]
        views, audit, budget = self.results[name]
        found = []
        compared = 0
        for step, a, b in zip(self.steps, base_views, views):
            compared += len(a)
            for observable, va, vb in differences(a, b):
                found.append("%s\n    observable %s: D=%s  D'=%s" % (
                    step.describe(name), observable, _short(va), _short(vb)))
        # Which requests were charged, and what: by request id (failed ones included).
        by_id_a = {e["request_id"]: e for e in base_audit}
        by_id_b = {e["request_id"]: e for e in audit}
        for rid in sorted(set(by_id_a) | set(by_id_b)):
            ea, eb = by_id_a.get(rid), by_id_b.get(rid)
            strip = (lambda e: {k: v for k, v in e.items() if k != "seq"} if e else None)
            if strip(ea) != strip(eb):
                found.append("audit entry of request %s: D=%s  D'=%s" % (rid, _short(ea), _short(eb)))
        if [e["request_id"] for e in base_audit] != [e["request_id"] for e in audit]:
            found.append("audit order differs")
        if budget != base_budget:
            found.append("final budget: D=%r  D'=%r" % (base_budget, budget))
        sys.stderr.write("[neighbour] %s: %d requests, %d observables compared, %d audit rows, %d "
                         "differences\n" % (name, len(self.steps), compared, len(audit), len(found)))
        if found:
            self.fail("%d observable(s) differ between D (nb_base) and D' (%s = D + one unit, %d "
                      "rows) over %d requests:\n%s%s" % (
                          len(found), name, len(VARIANTS[variant]), len(self.steps),
                          "\n".join(found[:MAX_SHOWN_DIFFERENCES]),
                          "\n..." if len(found) > MAX_SHOWN_DIFFERENCES else ""))

    def test_neighbour_nulls_in_every_column(self):
        self.compare_with_base("nulls")

    def test_neighbour_values_near_dbl_max_and_int64_limits(self):
        self.compare_with_base("huge")

    def test_neighbour_nan_and_infinities(self):
        self.compare_with_base("nonfinite")

    def test_neighbour_values_far_outside_declared_bounds(self):
        self.compare_with_base("outside")

    def test_neighbour_undeclared_group_keys_and_category(self):
        self.compare_with_base("newkey")

    def test_neighbour_500_rows_for_one_unit(self):
        self.compare_with_base("many")

    def test_neighbour_the_null_unit(self):
        self.compare_with_base("nullunit")

    def test_neighbour_huge_values_whose_per_unit_sum_overflows(self):
        self.compare_with_base("hugesum")

    def test_neighbour_tiny_and_subnormal_values(self):
        self.compare_with_base("tiny")

    def test_neighbour_all_zero_values(self):
        self.compare_with_base("zeros")

    def test_neighbour_2000_rows_of_1e308_for_one_unit(self):
        self.compare_with_base("manyhuge")

    def test_grid_size_and_success_mix(self):
        """The grid is big enough to matter and mostly reaches the data: a grid of refusals
        would compare nothing but error messages."""
        if "nb_base" in self.grid_errors:
            raise self.grid_errors["nb_base"]
        views = self.results["nb_base"][0]
        ok = sum(1 for v in views if v.get("exit", 0) == 0 and "error.code" not in v)
        self.assertGreaterEqual(len(self.steps), 300)
        self.assertGreaterEqual(ok, 180, "only %d of %d requests succeeded on D" % (ok, len(views)))
        # The SQL and --per-unit requests answer on D but for the ones meant to be refused (bounds
        # above 1e15, SUM of a column without declared bounds).
        refused = ({"sql s-%02d" % i for i in SQL_REFUSED} | {"explain %d" % i for i in SQL_REFUSED}
                   | {"query pu-%02d" % i for i in PER_UNIT_REFUSED})
        new = [(s.label, v) for s, v in zip(self.steps, views)
               if s.label.split(" ")[0] in ("sql", "explain") or s.label.startswith("query pu-")]
        self.assertGreaterEqual(len(new), 40)
        wrong = ["%s: %s" % (label, v.get("error.message", "answered")) for label, v in new
                 if (v.get("exit") == 0) == (label in refused)]
        self.assertEqual(wrong, [], "SQL / --per-unit requests on D that did not answer (or "
                                    "should have been refused)")

    def test_sql_replay_cache_and_flag_twin_on_the_grid(self):
        """The grid's SQL statement asked again with its request id is replayed, with a new id
        served from alice's result cache, from bob a fresh release; the --per-unit flag query of
        the same question (asked after it) is the cached release too."""
        if "nb_base" in self.grid_errors:
            raise self.grid_errors["nb_base"]
        views = self.results["nb_base"][0]
        labels = [s.label for s in self.steps]
        first = labels.index("sql s-%02d" % SQL_TWIN)
        replay = labels.index("sql s-%02d" % SQL_TWIN, first + 1)
        by_label = {label: v for label, v in zip(labels, views)}
        self.assertEqual((views[first].get("exit"), views[first].get("cached")), (0, False))
        self.assertTrue(views[replay].get("replayed"), views[replay])
        self.assertTrue(by_label["sql s-again-%02d" % SQL_TWIN].get("cached"))
        self.assertEqual(by_label["sql s-again-%02d" % SQL_TWIN].get("epsilon"), 0)
        self.assertFalse(by_label["sql s-bob-%02d" % SQL_TWIN].get("cached"))
        self.assertEqual(by_label["sql s-bob-%02d" % SQL_TWIN].get("epsilon"), EPS)
        self.assertTrue(by_label["query pu-00"].get("cached"), by_label["query pu-00"])

    def test_result_cache_is_per_analyst(self):
        """The same question again from the same analyst is the stored release (cached, nothing
        charged); from another analyst it is a fresh, charged release (item 6 of the fix)."""
        if "nb_base" in self.grid_errors:
            raise self.grid_errors["nb_base"]
        views, audit, _ = self.results["nb_base"]
        by_label = {s.label: v for s, v in zip(self.steps, views)}
        charged = {e["request_id"] for e in audit}
        self.assertTrue(self.repeated)
        for i in self.repeated:
            first = by_label["query q-%04d" % i]
            again = by_label["query again-%04d" % i]
            bob = by_label["query bob-%04d" % i]
            self.assertEqual(first.get("exit"), 0, first)
            self.assertTrue(again.get("cached"), "alice's repeat %d not cached: %r" % (i, again))
            self.assertNotIn("again-%04d" % i, charged, "alice's cached repeat %d was charged" % i)
            self.assertFalse(bob.get("cached"), "bob got alice's cached release for query %d" % i)
            self.assertIn("bob-%04d" % i, charged, "bob's release of query %d was not charged" % i)

    def test_schema_seen_by_analyst_is_the_same_on_every_neighbour(self):
        if "nb_base" in self.grid_errors:
            raise self.grid_errors["nb_base"]
        base = self.results["nb_base"][0][0]
        self.assertEqual(base.get("exit"), 0, base)
        for name in self.loaded:
            if name in self.results:
                self.assertEqual(differences(base, self.results[name][0][0]), [],
                                 "dataset show differs between nb_base and %s" % name)

    # -- regression tests -------------------------------------------------------------------

    def _create(self, name, header, rows, types, extra=()):
        path = os.path.join(self.dir, name + ".csv")
        with open(path, "w") as f:
            f.write(header + "\n" + "".join(r + "\n" for r in rows))
        args = ["dataset", "create", name, "--csv", path, "--privacy-unit", "pid"]
        for t in types:
            args += ["--type", t]
        self.dpqd.ctl(*args, *extra)
        self.dpqd.ctl("budget", "set", name, "--epsilon", BUDGET_EPS, "--delta", BUDGET_DELTA)
        self.dpqd.ctl("grant", "alice", name)
        return path

    def test_overflow_probe_same_status_and_charge_on_n_minus_1_and_n_rows(self):
        """Overflow probe: with L = DBL_MAX / (n - 1/2), n kept values clamped to L overflow a
        float8 sum and n - 1 do not. The answer (status, message, charge) must be the same on
        datasets with n - 1 and n kept rows, for every release that clamps to [L, L+]."""
        n = 20
        lo = DBL_MAX / (n - 0.5)
        hi = math.nextafter(lo, math.inf)
        names = {}
        for kept in (n - 1, n):
            name = "ov_%d" % kept
            self._create(name, "pid,u", ["%d,1.5" % i for i in range(1, kept + 1)],
                         ["pid=integer", "u=double"])
            names[kept] = name
        probes = [
            ["--aggregate", "sum", "--column", "u", "--lower", repr(lo), "--upper", repr(hi)],
            ["--aggregate", "sum", "--column", "pid", "--lower", repr(lo), "--upper", repr(hi)],
            ["--aggregate", "sum", "--column", "u", "--lower", repr(lo), "--upper", repr(hi),
             "--where", "u >= 0"],
            ["--aggregate", "mean", "--column", "u", "--lower", repr(lo), "--upper", repr(hi)],
            ["--aggregate", "histogram", "--column", "u", "--bins", "%r,%r" % (lo, hi)],
            ["--aggregate", "quantile", "--column", "u", "--quantiles", "0.5", "--lower", repr(lo),
             "--upper", repr(hi)],
        ]
        tokens = self.ctx.tokens
        for i, (probe, epsilon) in enumerate(itertools.product(probes, (1.0, 1e-9))):
            seen = {}
            for kept, name in names.items():
                before = self.snapshot(self.dpqd, name)
                r = self.dpqd.ctl("query", name, *probe, "--epsilon", repr(epsilon),
                                  "--request-id", "ov-%d" % i, token=tokens["alice"], check=False)
                after = self.snapshot(self.dpqd, name)
                seen[kept] = (r.returncode, r.error_code, r.error_message,
                              after[0] - before[0], after[2] - before[2])
            self.assertEqual(seen[n - 1], seen[n],
                             "overflow probe %s --epsilon %g: (exit, code, message, epsilon charged, "
                             "audit rows added) differ between %d and %d kept rows" %
                             (" ".join(probe), epsilon, n - 1, n))
        batch = os.path.join(self.dir, "ov_batch.json")
        with open(batch, "w") as f:
            json.dump([{"aggregate": "count", "epsilon": 1.0},
                       {"aggregate": "sum", "column": "u", "lower": lo, "upper": hi, "epsilon": 1.0}], f)
        seen = {}
        for kept, name in names.items():
            before = self.snapshot(self.dpqd, name)
            r = self.dpqd.ctl("query-batch", name, "--file", batch, "--request-id", "ov-batch",
                              token=tokens["alice"], check=False)
            after = self.snapshot(self.dpqd, name)
            seen[kept] = (r.returncode, r.error_code, r.error_message, after[0] - before[0])
        self.assertEqual(seen[n - 1], seen[n], "overflow probe in a batch")

    def test_null_unit_does_not_switch_the_bounding_method(self):
        """NULL switch: every unit's rows are loaded as [0, 10], so with K = 1 the rank kept at
        load is the 0 (a random choice keeps the 10 half of the time: the sum would be ~10 * 50 / 2).
        One more unit with a NULL value must not change that: the sum over [0, 10] is 0 on both.
        "0" means: inside the released interval at confidence 1 - 1e-9 (so each check fails by
        chance with probability <= 1e-9), whose half-width must stay below 5 so that one kept 10
        could not hide in it."""
        units = 50
        rows = []
        for pid in range(1, units + 1):
            rows += ["%d,0" % pid, "%d,10" % pid]
        types = ["pid=integer", "x=double"]
        self._create("nr_base", "pid,x", rows, types, ("--bounds", "x=0:10"))
        self._create("nr_null", "pid,x", rows + ["%d," % (units + 1)], types, ("--bounds", "x=0:10"))
        for name in ("nr_base", "nr_null"):
            for run in range(10):
                # A distinct epsilon per run: a repeated question would be the cached release.
                r = self.dpqd.ctl("query", name, "--aggregate", "sum", "--column", "x", "--lower", "0",
                                  "--upper", "10", "--max-contributions", "1",
                                  "--epsilon", repr(1e5 + run), "--confidence", "0.999999999",
                                  token=self.ctx.tokens["alice"])
                lo, hi = r["interval"]["lower"], r["interval"]["upper"]
                self.assertLess((hi - lo) / 2, 5.0, r)
                self.assertTrue(lo <= 0.0 <= hi,
                                "%s run %d: sum over [0, 10] with K=1 is %r, interval [%r, %r] does "
                                "not hold 0: the rank chosen at load was not used" %
                                (name, run, r["value"], lo, hi))

    # -- per-unit sums of huge values, variances of tiny ones -----------------------------------

    def _observe(self, dataset, args, request_id):
        """(exit, error code, error message, the epsilon and delta the answer states, the audit
        rows it added (without seq and request id)) of one request by alice on `dataset`."""
        before = len(self.dpqd.ctl("audit", dataset)["entries"])
        r = self.dpqd.ctl(*args, "--request-id", request_id, token=self.ctx.tokens["alice"],
                          check=False)
        added = self.dpqd.ctl("audit", dataset)["entries"][before:]
        return (r.returncode, r.error_code, r.error_message, r.get("epsilon"), r.get("delta"),
                [{k: e.get(k) for k in AUDIT_FIELDS if k not in ("seq", "request_id")}
                 for e in added])

    def _assert_answered_alike(self, runs):
        """runs: [(what, observed on one side, observed on the other)]. Both sides must answer,
        with the same charge; every mismatch is listed."""
        bad = ["%s:\n    %r\n    %r" % (what, a, b) for what, a, b in runs if a != b or a[0] != 0]
        self.assertEqual(bad, [], "(exit, code, message, epsilon, delta, audit rows) differ or "
                         "are not an answer:\n" + "\n".join(bad))

    def test_per_unit_sum_of_huge_values_answers_on_both_neighbours(self):
        """A per-unit SUM / AVG adds up each unit's raw values before it clamps the total to
        [L, U]: with two rows of u = 1e308 that raw total overflows float8. D and D plus such a unit
        must both answer, with the same charge (an error on one side only would tell the analyst
        that the unit exists), through SQL (per-unit by default) and through --per-unit, with
        the declared and with explicit bounds, grouped and not."""
        # u has declared bounds (the default ones), w the same values and none (explicit bounds).
        rows = ["%d,%r,%r,%s" % (pid, v, v, "ab"[pid % 2])
                for pid, v in ((pid, round(pid * 7.3 % 100, 2)) for pid in range(1, 31))]
        types = ["pid=integer", "u=double", "w=double", "cat=text"]
        extra = ("--bounds", "u=0:100", "--categories", "cat=a|b")
        names = ("pu_base", "pu_huge")
        self._create(names[0], "pid,u,w,cat", rows, types, extra)
        self._create(names[1], "pid,u,w,cat", rows + ["%d,1e308,1e308,a" % ADDED] * 2, types, extra)
        statements = [
            "SUM(u) AS s FROM {d}",
            "AVG(u) AS a FROM {d}",
            "cat, SUM(u) AS s, AVG(u) AS a FROM {d} GROUP BY cat",
            "SUM(u) AS s, AVG(u) AS a, COUNT(*) AS n FROM {d}",
            "SUM(w, contribution_bounds_per_group => %s) AS s FROM {d}" % WIDE,
            "AVG(w, contribution_bounds_per_group => %s) AS a FROM {d}" % WIDE,
        ]
        flags = [
            ["--aggregate", "sum", "--column", "u", "--per-unit"],
            ["--aggregate", "mean", "--column", "u", "--per-unit"],
            ["--aggregate", "sum", "--column", "u", "--per-unit", "--group-by", "cat"],
            ["--aggregate", "sum", "--column", "w", "--per-unit", "--lower=-1e15", "--upper=1e15"],
            ["--aggregate", "mean", "--column", "w", "--per-unit", "--lower=-1e15", "--upper=1e15"],
        ]
        runs = []
        for i, body in enumerate(statements):
            # epsilon 1: a question of its own (the flag queries below ask at epsilon 2).
            seen = [self._observe(name, ["sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS "
                                         "(epsilon = 1) " + body.replace("{d}", name)],
                                  "pu-sql-%d" % i) for name in names]
            runs.append(("dpqctl sql %r" % body, seen[0], seen[1]))
        for i, args in enumerate(flags):
            seen = [self._observe(name, ["query", name] + args + ["--epsilon", "2"],
                                  "pu-flag-%d" % i) for name in names]
            runs.append(("dpqctl query %s" % " ".join(args), seen[0], seen[1]))
        self._assert_answered_alike(runs)

    def test_variance_with_tiny_bounds_answers_whether_a_value_is_zero_or_not(self):
        """With bounds (-1e-147, 1.0000000000000001e-147) a variance works with squares of order
        1e-294 and below, where float8 underflows for some values (a row holding exactly 0) and
        not for others (a nonzero value, clamped to a bound). The status and charge must not tell
        them apart: --where "pid = <id>" on a unit holding 0 and on one holding 5, and D against D
        plus a unit holding 0, all answer with the same charge."""
        rows = ["1,0", "2,5"] + ["%d,%r" % (pid, round(pid * 0.37 - 3.1, 2))
                                 for pid in range(3, 25)]
        types = ["pid=integer", "u=double"]
        names = ("tv_base", "tv_zero")
        self._create(names[0], "pid,u", rows, types)
        self._create(names[1], "pid,u", rows + ["%d,0" % ADDED], types)
        tiny = ["--column", "u", "--lower=-1e-147", "--upper=1.0000000000000001e-147"]
        runs = []
        for aggregate, mechanism in itertools.product(("variance", "stddev"),
                                                      ("laplace", "gaussian")):
            args = ["--aggregate", aggregate] + tiny + ["--mechanism", mechanism, "--epsilon", "1"]
            if mechanism == "gaussian":
                args += ["--delta", "1e-6"]
            rid = "tv-%s-%s" % (aggregate, mechanism)
            seen = [self._observe(names[0], ["query", names[0]] + args +
                                  ["--where", "pid = %d" % pid], "%s-%d" % (rid, pid))
                    for pid in (1, 2)]
            runs.append(("%s --where 'pid = 1' (u = 0) vs 'pid = 2' (u = 5)" % " ".join(args),
                         seen[0], seen[1]))
            for j, where in enumerate(("", "pid = %d" % ADDED, "u >= 0")):
                more = ["--where", where] if where else []
                seen = [self._observe(name, ["query", name] + args + more, "%s-w%d" % (rid, j))
                        for name in names]
                runs.append(("%s %s: D vs D + a unit holding 0" % (" ".join(args), " ".join(more)),
                             seen[0], seen[1]))
        for i, body in enumerate((
                "VAR_POP(u, contribution_bounds_per_row => %s) AS v FROM {d}" % TINY,
                "STDDEV_POP(u, contribution_bounds_per_row => %s) AS sd FROM {d} WHERE pid = %d" %
                (TINY, ADDED))):
            seen = [self._observe(name, ["sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS "
                                         "(epsilon = 1) " + body.replace("{d}", name)],
                                  "tv-sql-%d" % i) for name in names]
            runs.append(("dpqctl sql %r: D vs D + a unit holding 0" % body, seen[0], seen[1]))
        self._assert_answered_alike(runs)

    def test_non_integer_in_integer_column_is_refused_whole(self):
        """A 2.5 cannot turn a declared integer column into a double one (a type inferred
        from the data leaks one value): create and load are refused, all or nothing, and
        the analyst's view of the dataset does not move."""
        header = ",".join(COLUMNS)
        good = [",".join(r) for r in self.base[:30]]
        bad_row = "%d,1.0,2.5,a,g0,1.0,2026-01-05" % ADDED
        types = ["%s=%s" % (c, TYPES[c]) for c in COLUMNS]
        path = os.path.join(self.dir, "int_create.csv")
        with open(path, "w") as f:
            f.write(header + "\n" + "\n".join(good + [bad_row]) + "\n")
        args = ["dataset", "create", "int_create", "--csv", path, "--privacy-unit", "pid"]
        for t in types:
            args += ["--type", t]
        refused = self.dpqd.ctl(*args, *DECLARED, check=False)
        self.assert_error(refused, "INVALID_ARGUMENT")
        self.assert_error(self.dpqd.ctl("dataset", "show", "int_create", check=False), "NOT_FOUND")

        self._create("int_load", header, good, types, DECLARED)
        alice = self.ctx.tokens["alice"]
        before_show = self.dpqd.ctl("dataset", "show", "int_load", token=alice)
        before_budget = self.snapshot(self.dpqd, "int_load")
        first = self.dpqd.ctl("query", "int_load", "--aggregate", "count", "--epsilon", EPS,
                              "--request-id", "int-1", token=alice)
        load_path = os.path.join(self.dir, "int_load_more.csv")
        with open(load_path, "w") as f:
            f.write(header + "\n" + "%d,5.0,7,b,g1,2.0,2026-01-06\n" % (ADDED + 1) + bad_row + "\n")
        self.assert_error(self.dpqd.ctl("dataset", "load", "int_load", "--csv", load_path,
                                        check=False), "INVALID_ARGUMENT")
        after_show = self.dpqd.ctl("dataset", "show", "int_load", token=alice)
        self.assertEqual(dict(after_show), dict(before_show))
        n_column = [c for c in after_show["columns"] if c["name"] == "n"][0]
        self.assertEqual(n_column["type"], "integer")
        # Nothing was appended (not even the valid first row): the version is the same, so the
        # same question is still the cached release of the same data.
        again = self.dpqd.ctl("query", "int_load", "--aggregate", "count", "--epsilon", EPS,
                              "--request-id", "int-2", token=alice)
        self.assertTrue(again["cached"], again)
        self.assertEqual(again["value"], first["value"])
        after_budget = self.snapshot(self.dpqd, "int_load")
        self.assertEqual(after_budget[0] - before_budget[0], EPS)


if __name__ == "__main__":
    unittest.main()
