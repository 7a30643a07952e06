"""p8 of bench/run_bench.py: a DP SQL join through dpqd against PostgreSQL running the same SQL.

Two datasets of one population: `visits` (about N rows, N/10 patients with 1..19 visits each,
shuffled) and `patients` (one row per patient, age 0..99). The statement

  SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = e, max_groups_contributed = 1)
    SUM(v.cost, contribution_bounds_per_group => (0, 2000))
  FROM visits v JOIN patients p USING (pid) WHERE p.age > 60

runs through `dpqctl sql` (a fresh process each time, a fresh epsilon each time so that the result
cache never answers) against, via psql (a fresh process each time):
  (a) the exact scan dpqd ran for it, taken from the PostgreSQL log with its parameters substituted
      (the join, the per-unit sum and its clamp), and
  (b) the plain join and sum on the same tables, without any bounding.
The methods run ABBA-interleaved (forward, then reversed order) so that drift and the other
sessions' load on the shared cores hit each alike; the spread of every method and the ratio of
each consecutive forward/reversed pair are reported beside the medians.
"""

import os
import random
import statistics
import time

import query_10m_bench as q10

POPULATION = "join_pop"
COST_UPPER = 500  # declared bound of one visit's cost; about 1/6 of the values lie above it
PER_PATIENT = (0, 2000)  # contribution_bounds_per_group: a patient's summed cost is clamped to it
STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %s, max_groups_contributed = 1) "
             "SUM(v.cost, contribution_bounds_per_group => (%d, %d)) "
             "FROM visits v JOIN patients p USING (pid) WHERE p.age > 60")


def generate(visits_path, patients_path, rows, seed):
    """rows/10 patients with 1..19 visits each (mean 10), in shuffled order; returns the number of
    visits written."""
    rng = random.Random(seed)
    units = max(1, rows // 10)
    order = []
    for u in range(1, units + 1):
        order.extend([u] * rng.randint(1, 19))
    rng.shuffle(order)
    with open(visits_path, "w") as f:
        f.write("pid,cost\n")
        f.writelines("%d,%.2f\n" % (u, rng.random() * COST_UPPER * 1.2) for u in order)
    with open(patients_path, "w") as f:
        f.write("pid,age\n")
        f.writelines("%d,%d\n" % (u, rng.randrange(100)) for u in range(1, units + 1))
    return len(order), units


def abba(methods, reps, warmup, label="p8"):
    """Wall times (and psql's in-session times) per method: warm-up rounds, then `reps` rounds
    alternating forward and reversed order (A B C, C B A, ...)."""
    names = list(methods)
    wall = {m: [] for m in names}
    session = {}
    for r in range(warmup + reps):
        measured = r >= warmup
        order = names if not measured or (r - warmup) % 2 == 0 else names[::-1]
        for m in order:
            got = methods[m]()
            dt, in_session = got if isinstance(got, tuple) else (got, None)
            if measured:
                wall[m].append(dt)
                if in_session is not None:
                    session.setdefault(m, []).append(in_session)
        q10.log("  %s round %d%s done (%s)" % (label, r, "" if measured else " (warm-up)",
                                               q10.load_conditions()))
    return wall, session


def spread(times):
    """min, median, max and (max - min) / median of one method's wall times."""
    med = statistics.median(times)
    return {"min": round(min(times), 4), "median": round(med, 4), "max": round(max(times), 4),
            "spread": round((max(times) - min(times)) / med, 3)}


def pair_ratios(num, den):
    """The ratio of each forward/reversed pair of rounds (each method's mean over the pair), so
    that the reader sees how far one pair's verdict can swing."""
    return [round((num[i] + num[i + 1]) / (den[i] + den[i + 1]), 3)
            for i in range(0, len(num) - 1, 2)]


def p8_join_sum(bench, rows, label, reps, warmup):
    """Runs p8 on `bench` (run_bench.Scenarios: its dpqd, analyst token, ctl/psql and scenario());
    `label` names the row count in the scenarios' names."""
    t_start = time.perf_counter()
    q10.log("== p8: DP SQL join sum through dpqd vs its exact SQL and a plain join sum via psql")
    conditions_start = q10.load_conditions()
    visits_csv = os.path.join(bench.tmp, "visits_%d.csv" % rows)
    patients_csv = os.path.join(bench.tmp, "patients_%d.csv" % rows)
    visits, units = generate(visits_csv, patients_csv, rows, 20261205)
    bench.ctl("population", "create", POPULATION, "--unit-type", "integer")
    bench.ctl("dataset", "create", "visits", "--csv", visits_csv, "--population", POPULATION,
              "--privacy-unit", "pid", "--type", "pid=integer", "--type", "cost=double",
              "--bounds", "cost=0:%d" % COST_UPPER)
    bench.ctl("dataset", "create", "patients", "--csv", patients_csv, "--population", POPULATION,
              "--privacy-unit", "pid", "--type", "pid=integer", "--type", "age=integer",
              "--bounds", "age=0:120")
    bench.ctl("budget", "set", POPULATION, "--epsilon", "1000000", "--delta", "0.001")
    tables = {}
    for name in ("visits", "patients"):
        bench.ctl("grant", "bench", name)
        tables[name] = "dpq_data.ds_%s" % bench.psql(
            "SELECT id FROM datasets WHERE name = '%s'" % name)[1]
        # Same state for every method: hint bits set, visibility map and statistics current.
        bench.psql("VACUUM (ANALYZE) %s" % tables[name])
    bench.psql("CHECKPOINT")
    eps = [0]

    def dpq_sql():
        eps[0] += 1  # a fresh epsilon: a new fingerprint, so never a cached answer
        statement = STATEMENT % (("%.6f" % (1 + 1e-6 * eps[0]),) + PER_PATIENT)
        dt, doc = bench.ctl("sql", statement, token=bench.token)
        if doc.get("cached"):
            raise RuntimeError("p8: a cached answer in a benchmark run: %s" % doc)
        return dt

    # The trailing space keeps ds_1 from matching ds_12; the join must read both tables.
    exact = q10.extract_scan_sql(bench.server_log_of(dpq_sql), tables["visits"] + " ")
    if ("JOIN %s " % tables["patients"]) not in exact:
        raise RuntimeError("p8: the captured scan does not join patients: " + exact)
    q10.log("  captured: " + exact)
    plain = ("SELECT sum(v.cost) FROM %s v JOIN %s p USING (pid) WHERE p.age > 60"
             % (tables["visits"], tables["patients"]))
    methods = {
        "dpq sql join sum": dpq_sql,
        "psql exact SQL": lambda: bench.psql_query(exact),
        "psql plain join sum": lambda: bench.psql_query(plain),
    }
    wall, session = abba(methods, reps, warmup)
    dpq, same, raw = (wall[m] for m in methods)
    common = dict(rows=visits, patients=units, reps=reps, warmup=warmup, order="ABBA",
                  conditions_start=conditions_start, conditions_end=q10.load_conditions(),
                  seconds=round(time.perf_counter() - t_start, 1))
    bench.scenario("p8_join_sum_%s" % label, round(statistics.median(dpq), 4),
                   round(statistics.median(same), 4), "s",
                   strict_ratio=round(statistics.median(dpq)
                                      / statistics.median(session["psql exact SQL"]), 3),
                   min_ratio=round(min(dpq) / min(same), 3), pair_ratios=pair_ratios(dpq, same),
                   dpq=spread(dpq), psql=spread(same), sql=exact,
                   baseline_is="the SQL dpqd ran (from the PostgreSQL log), via psql", **common)
    bench.scenario("p8_join_sum_vs_plain_join_%s" % label, round(statistics.median(dpq), 4),
                   round(statistics.median(raw), 4), "s",
                   min_ratio=round(min(dpq) / min(raw), 3), pair_ratios=pair_ratios(dpq, raw),
                   dpq=spread(dpq), psql=spread(raw), sql=plain,
                   baseline_is="plain join and sum of the same tables, no bounding, via psql",
                   **common)

