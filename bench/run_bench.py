#!/usr/bin/env python3
"""Every end-to-end scenario of bench/README.md ("run.sh") with its baseline, in one invocation.

bench/run.sh calls this with the build's bin directory. It starts one throwaway dpqd on its own
embedded (durable: fsync on) PostgreSQL, generates the data, and runs, side by side on the same
cluster and the same data:

  p2  debits/s over gRPC (dpq-bench, count queries, each a full lock-and-debit with an audit row)
      on one hot dataset at each client count, and on many datasets at random, against pgbench
      running bench/pgbench/debit_single_statement.sql on one ledger row at the same client count
  p6  dpqd's resident memory at rest, and its peak while the most clients run (sampled)
  p3  small-query p50 (count, 10k rows) against pgbench -c 1 running the very SQL dpqd ran
      (captured from the server log) followed by the debit transaction (debit_multi_statement.sql)
  p4  p50 of a debit after H prior allocations against one on a fresh ledger, per accountant
  p7  the p50 debit on an rdp/zcdp/pld ledger with 10k prior events, and the time of a PLD price
      of 100 events (dpqctl price, process start included; a one-event basic price beside it)
  p8  a DP SQL join sum (visits JOIN patients of one population) through dpqctl sql against the
      exact scan dpqd ran (from the server log) and a plain join sum, both via psql
      (bench/join_bench.py)

and, through bench/query_10m_bench.py on its own cluster (one run per row count):

  p1  DP clipped sum K=5 through dpqd against the identical SQL via psql, and against a plain
      clamped sum without bounding
  p5  CSV ingest through dpqctl against psql \\copy

It writes one JSON document (machine, conditions, every scenario with measured, baseline, ratio
and goal), gnuplot SVGs, and prints the table of ratios. Exit status: 0, or 3 when a goal was
missed (never with --quick, whose sizes are too small to mean anything); any other failure raises.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import query_10m_bench as q10  # noqa: E402  (reused: dpqd/psql plumbing, CSV generator)
import join_bench  # noqa: E402
import shard_bench  # noqa: E402

PGBIN = "/usr/lib/postgresql/15/bin"
ACCOUNTANTS = ("basic", "rdp", "zcdp", "pld")
ANALYST = "bench"
# Large enough that no benchmark exhausts it; delta > 0 so that every accountant accepts it.
BUDGET_EPSILON, BUDGET_DELTA = "1000000", "0.001"

SIZES = {
    "full": dict(p1_rows=[1_000_000, 10_000_000], p1_ingest_reps=3, p1_reps=5, p1_warmup=1,
                 clients=[1, 8, 32, 64], p2_seconds=5, random_datasets=100, random_clients=32,
                 p3_rows=10_000, p3_seconds=4, p3_pairs=2,
                 history=[0, 10_000, 100_000], p7_history=10_000, p4_seconds=3, p4_pairs=2,
                 prefill_clients=64, prefill_max_seconds=900, price_reps=5, hot_rows=1_000,
                 p8_rows=1_000_000, p8_reps=8, p8_warmup=1,
                 p9_rows=10_000_000, p9_reps=6, p9_warmup=1, p9_copy_rows=200_000),
    "quick": dict(p1_rows=[20_000], p1_ingest_reps=1, p1_reps=1, p1_warmup=0,
                  clients=[1, 4], p2_seconds=1, random_datasets=3, random_clients=4,
                  p3_rows=1_000, p3_seconds=1, p3_pairs=1,
                  history=[0, 200], p7_history=200, p4_seconds=0.5, p4_pairs=1,
                  prefill_clients=4, prefill_max_seconds=60, price_reps=1, hot_rows=100,
                  p8_rows=10_000, p8_reps=2, p8_warmup=1,
                  p9_rows=10_000, p9_reps=2, p9_warmup=0, p9_copy_rows=2_000),
}


def log(msg):
    print(msg, flush=True)


def rows_label(rows):
    return "%dm" % (rows // 1_000_000) if rows % 1_000_000 == 0 else "%dk" % (rows // 1000)


class Scenarios(q10.Bench):
    """One dpqd (q10.Bench's process handling, ctl() and psql()) and the scenarios above."""

    def __init__(self, args, size):
        super().__init__(args)
        self.size = size
        self.bench_bin = os.path.join(args.bin_dir, "dpq-bench")
        self.scenarios = []
        self.series = {}  # plot data
        self.token = None
        self.ids = {}
        self.ledger_ids = {}
        self.runs = 0
        self.only = args.only

    # -- helpers --------------------------------------------------------------------------------

    def scenario(self, name, measured, baseline, unit, goal=None, goal_on_measured=False, **extra):
        """Records one scenario. goal: (">=" | "<=", bound) on the ratio (on `measured` when there
        is no baseline or goal_on_measured)."""
        ratio = measured / baseline if baseline else None
        entry = {"name": name, "measured": measured, "baseline": baseline, "unit": unit,
                 "ratio": None if ratio is None else round(ratio, 3)}
        if goal is not None:
            op, bound = goal
            value = measured if (ratio is None or goal_on_measured) else ratio
            if goal_on_measured:
                entry["goal_on"] = "measured"
            entry["goal"] = "%s %g" % (op, bound)
            entry["met"] = bool(value >= bound if op == ">=" else value <= bound)
        entry.update(extra)
        self.scenarios.append(entry)
        log("  %-40s %s" % (name, json.dumps({k: v for k, v in entry.items() if k != "name"})))
        return entry

    def dpq_bench(self, datasets, clients, seconds=None, count=None, extra=()):
        # Each run its own epsilon (see dpq-bench --help): no answer ever comes from the cache.
        self.runs += 1
        argv = [self.bench_bin, "--server", "127.0.0.1:%d" % self.port, "--token", self.token,
                "--dataset", ",".join(datasets), "--clients", str(clients), "--json",
                "--epsilon", "%.9g" % (0.001 + 1e-5 * self.runs)]
        argv += ["--duration", str(seconds if seconds else self.size["prefill_max_seconds"])]
        if count:
            argv += ["--count", str(count)]
        p = subprocess.run(argv + list(extra), stdin=subprocess.DEVNULL, capture_output=True,
                           text=True)
        if p.returncode != 0:
            raise RuntimeError("dpq-bench failed (exit %d): %s %s" % (p.returncode, p.stdout, p.stderr))
        doc = json.loads(p.stdout)
        if doc["errors"] or doc["cached"]:
            raise RuntimeError("dpq-bench: refused or cached answers in a benchmark run: %s" % doc)
        return doc

    def pgbench(self, script, clients, seconds, ds):
        """pgbench -M prepared on this cluster; (transactions/s, p50 ms from its per-transaction
        log). Same options as ledger_debit_bench (-j min(N, 2))."""
        prefix = os.path.join(self.tmp, "pgbench_log")
        argv = [os.path.join(PGBIN, "pgbench"), "-n", "-M", "prepared", "-f", script,
                "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(max(1, round(seconds))),
                "-D", "ds=%d" % ds, "-D", "principal=%d" % self.ids["principal"],
                "-l", "--log-prefix=" + prefix, self.url]
        _, out = q10.timed(argv)
        tps = None
        for line in out.splitlines():
            if line.startswith("tps = "):
                tps = float(line.split()[2])
        latencies = []
        for path in glob.glob(prefix + "*"):
            with open(path) as f:
                latencies += [int(line.split()[2]) / 1000.0 for line in f if line.strip()]
            os.unlink(path)
        if tps is None or not latencies:
            raise RuntimeError("no tps or log in pgbench output:\n" + out)
        return tps, statistics.median(latencies)

    def create_dataset(self, name, csv, accountant="basic"):
        self.ctl("dataset", "create", name, "--csv", csv, "--privacy-unit", "unit",
                 "--type", "unit=integer", "--type", "amount=double", "--type", "kind=text",
                 "--bounds", "amount=%d:%d" % (q10.LOWER, q10.UPPER))
        self.ctl("budget", "set", name, "--epsilon", BUDGET_EPSILON, "--delta", BUDGET_DELTA,
                 "--accountant", accountant)
        self.ctl("grant", ANALYST, name)
        self.ids[name] = int(self.psql("SELECT id FROM datasets WHERE name = '%s'" % name)[1])
        # The ledger's key: the population the dataset got of its own.
        self.ledger_ids[name] = int(self.psql(
            "SELECT population_id FROM datasets WHERE name = '%s'" % name)[1])

    def csv(self, rows):
        path = os.path.join(self.tmp, "data_%d.csv" % rows)
        if not os.path.exists(path):
            q10.generate_csv(path, rows, max(1, rows // 10), 20261202)
        return path

    def audit_entries(self, name):
        return int(self.psql("SELECT audit_head_seq FROM ledgers WHERE population_id = %d"
                             % self.ledger_ids[name])[1])

    def memory_mb(self):
        kb = self.dpqd_memory_kb()
        return kb["VmRSS"] / 1024.0, kb["VmHWM"] / 1024.0

    # -- the run --------------------------------------------------------------------------------

    def run(self):
        q10.log("conditions at start: %s" % q10.load_conditions())
        self.conditions = {"start": q10.load_conditions()}
        self.start_dpqd()
        self.log_parameters()
        self.token = self.ctl("analyst", "create", ANALYST)[1]["token"]
        self.ids["principal"] = int(self.psql(
            "SELECT id FROM principals WHERE name = '%s'" % ANALYST)[1])
        self.settings = self.psql(
            "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE "
            "name IN ('fsync','synchronous_commit','full_page_writes','shared_buffers',"
            "'server_version','max_parallel_workers_per_gather','jit')")[1]
        log("cluster: " + self.settings)
        if "p2" in self.only:
            self.p2_p6_debits_per_second()
        if "p3" in self.only:
            self.p3_small_query()
        if "p4" in self.only:
            self.p4_p7_history_and_accountants()
        if "p8" in self.only:
            s = self.size
            join_bench.p8_join_sum(self, s["p8_rows"], rows_label(s["p8_rows"]), s["p8_reps"],
                                   s["p8_warmup"])
        if "p9" in self.only:
            s = self.size
            shard_bench.p9_sharded(self, s["p9_rows"], rows_label(s["p9_rows"]), s["p9_reps"],
                                   s["p9_warmup"], s["p9_copy_rows"])
        self.conditions["end"] = q10.load_conditions()

    def p2_p6_debits_per_second(self):
        s = self.size
        log("== p2/p6: debits per second over gRPC vs pgbench single-statement debit")
        hot_csv = self.csv(s["hot_rows"])
        self.create_dataset("hot", hot_csv)
        self.create_dataset("pgbench_hot", hot_csv)
        randoms = ["r%03d" % i for i in range(s["random_datasets"])]
        for name in randoms:
            self.create_dataset(name, hot_csv)
        rest_rss, rest_hwm = self.memory_mb()
        single = os.path.join(HERE, "pgbench", "debit_single_statement.sql")
        rows = []
        peak = {"rss": 0.0}
        for clients in s["clients"]:
            self.psql("CHECKPOINT")
            sampling = clients == max(s["clients"])
            stop = threading.Event()
            sampler = None
            if sampling:
                def sample():
                    while not stop.is_set():
                        peak["rss"] = max(peak["rss"], self.memory_mb()[0])
                        time.sleep(0.02)
                sampler = threading.Thread(target=sample)
                sampler.start()
            doc = self.dpq_bench(["hot"], clients, s["p2_seconds"])
            if sampler:
                stop.set()
                sampler.join()
                hwm_after = self.memory_mb()[1]
            self.psql("CHECKPOINT")
            tps, pg_p50 = self.pgbench(single, clients, s["p2_seconds"],
                                        self.ledger_ids["pgbench_hot"])
            rows.append((clients, doc["throughput"], tps, doc["p50"], doc["p99"], pg_p50))
            goal = (">=", 2.0) if clients == 32 else None
            self.scenario("p2_debits_%d_clients" % clients, doc["throughput"], tps, "debits/s",
                          goal, dpq_p50_ms=doc["p50"], dpq_p99_ms=doc["p99"],
                          dpq_max_ms=doc["max"], pgbench_p50_ms=round(pg_p50, 3),
                          baseline_is="pgbench debit_single_statement.sql, same clients")
        self.series["clients"] = rows
        lo, hi = rows[0], rows[-1]
        self.scenario("p2_no_collapse_%d_vs_%d_clients" % (hi[0], lo[0]), hi[1], lo[1],
                      "debits/s", (">=", 1.0), baseline_is="dpq at %d client(s)" % lo[0])

        if randoms:  # --random-datasets 0 leaves this pass out
            # Many datasets at random: dpq-bench picks one per request; pgbench a random ledger row of
            # the same datasets' populations (their ids are consecutive, checked).
            ids = sorted(self.ledger_ids[n] for n in randoms)
            if ids != list(range(ids[0], ids[0] + len(ids))):
                raise RuntimeError("random datasets' ledger ids are not consecutive: %s" % ids)
            script = os.path.join(self.tmp, "debit_single_random.sql")
            with open(single) as src, open(script, "w") as dst:
                dst.write("\\set ds random(%d, %d)\n" % (ids[0], ids[-1]) + src.read())
            clients = s["random_clients"]
            self.psql("CHECKPOINT")
            doc = self.dpq_bench(randoms, clients, s["p2_seconds"])
            self.psql("CHECKPOINT")
            tps, _ = self.pgbench(script, clients, s["p2_seconds"], ids[0])
            self.scenario("p2_debits_%d_random_datasets_%d_clients" % (len(randoms), clients),
                          doc["throughput"], tps, "debits/s", dpq_p50_ms=doc["p50"],
                          dpq_p99_ms=doc["p99"],
                          baseline_is="pgbench single-statement debit on a random one of the same ledgers")

        self.scenario("p6_rss_at_rest", round(rest_rss, 1), None, "MB", ("<=", 100),
                      rss_mb=round(rest_rss, 1), hwm_mb_before_load=round(rest_hwm, 1))
        self.scenario("p6_rss_%d_clients" % max(s["clients"]), round(peak["rss"], 1), None, "MB",
                      ("<=", 100), rss_mb=round(peak["rss"], 1),
                      hwm_mb_after=round(hwm_after, 1),
                      note="peak of VmRSS sampled every 20 ms during the run; VmHWM is since start")

    def p3_small_query(self):
        s = self.size
        log("== p3: small query p50 vs the same SQL and debit transaction through pgbench")
        csv = self.csv(s["p3_rows"])
        self.create_dataset("small", csv)
        self.create_dataset("pgbench_small", csv)
        sql = self.capture_count_sql("small")
        script = os.path.join(self.tmp, "small_query.sql")
        with open(os.path.join(HERE, "pgbench", "debit_multi_statement.sql")) as f:
            debit = f.read()
        with open(script, "w") as f:
            f.write("-- the count dpqd ran (captured), then the debit transaction\n")
            f.write(sql + ";\n" + debit)
        dpq_p50, raw_p50 = [], []
        for _ in range(s["p3_pairs"]):
            dpq_p50.append(self.dpq_bench(["small"], 1, s["p3_seconds"])["p50"])
            raw_p50.append(self.pgbench(script, 1, s["p3_seconds"],
                                       self.ledger_ids["pgbench_small"])[1])
        dpq, raw = statistics.median(dpq_p50), statistics.median(raw_p50)
        self.scenario("p3_small_query_p50", dpq, raw, "ms", ("<=", 1.3),
                      rows=s["p3_rows"], dpq_p50s=dpq_p50, raw_p50s=[round(x, 3) for x in raw_p50],
                      baseline_is="pgbench -c 1: dpqd's captured count SQL, then the debit transaction")
        self.p3_round_trips(script)

    def p3_round_trips(self, script):
        """The round trips and statements of one warm small query, from PostgreSQL's statement
        log, against one run of the pgbench script it is compared with. dpqd's background work
        (the health watcher's migration check, the shard prober) writes to the same log now and
        then: the fewest of three captures (of each side) is the query's own."""
        trips, statements, texts = min(
            q10.round_trips_and_statements(
                self.server_log_of(lambda: self.dpq_bench(["small"], 1, count=1)))
            for _ in range(3))
        argv = [os.path.join(PGBIN, "pgbench"), "-n", "-M", "prepared", "-f", script, "-t", "1",
                "-D", "ds=%d" % self.ledger_ids["pgbench_small"],
                "-D", "principal=%d" % self.ids["principal"], self.url]
        for i, text in enumerate(texts, 1):
            log("    trip %2d: %s" % (i, text))
        pg_trips, pg_statements, _ = min(
            q10.round_trips_and_statements(self.server_log_of(lambda: q10.timed(argv)))
            for _ in range(3))
        self.scenario("p3_round_trips_per_query", trips, pg_trips, "round trips",
                      statements=statements, baseline_statements=pg_statements,
                      baseline_is="one pgbench transaction of the p3 script (count SQL + debit)",
                      source="PostgreSQL statement log, log_min_duration_statement = 0")

    def capture_count_sql(self, name):
        text = self.server_log_of(lambda: self.dpq_bench([name], 1, count=1))
        sql = q10.extract_scan_sql(text, "dpq_data.ds_%d" % self.ids[name])
        log("  captured: " + sql)
        return sql

    def p4_p7_history_and_accountants(self):
        s = self.size
        log("== p4/p7: debit p50 after prior allocations, per accountant")
        csv = self.csv(s["hot_rows"])
        history_rows = []
        for acct in ACCOUNTANTS:
            full, fresh = "hist_" + acct, "fresh_" + acct
            self.create_dataset(full, csv, acct)
            for h in s["history"]:
                self.create_dataset("%s_%d" % (fresh, h), csv, acct)
            for h in s["history"]:
                missing = h - self.audit_entries(full)
                if missing > 0:
                    t0 = time.perf_counter()
                    self.dpq_bench([full], s["prefill_clients"], count=missing)
                    log("  %s: prefilled to %d allocations in %.1f s" % (
                        full, self.audit_entries(full), time.perf_counter() - t0))
                reached = self.audit_entries(full)
                with_history, without = [], []
                for _ in range(s["p4_pairs"]):  # interleaved: drift hits both alike
                    without.append(self.dpq_bench(["%s_%d" % (fresh, h)], 1, s["p4_seconds"])["p50"])
                    with_history.append(self.dpq_bench([full], 1, s["p4_seconds"])["p50"])
                p50, base = statistics.median(with_history), statistics.median(without)
                history_rows.append((acct, reached, p50, base))
                if h == max(s["history"]):
                    self.scenario("p4_history_%s_%s" % (rows_label(h) if h >= 1000 else h, acct),
                                  p50, base, "ms", ("<=", 1.1), history=reached, history_target=h,
                                  baseline_is="p50 debit on a fresh %s ledger" % acct)
                if h == s["p7_history"] and acct != "basic":
                    self.scenario("p7_debit_%s_%s_history" % (acct, rows_label(h) if h >= 1000 else h),
                                  p50, None, "ms", ("<=", 50), history=reached,
                                  note="p50 latency of one count query (debit included) over gRPC")
        self.series["history"] = history_rows

        events = []
        for i in range(100):
            events += ["--event", "laplace:scale=%d" % (10 + i)]
        pld, one = [], []
        for _ in range(s["price_reps"]):
            pld.append(self.ctl("price", "--accountant", "pld", "--delta", "1e-6", *events)[0])
            one.append(self.ctl("price", "--accountant", "basic", "--delta", "1e-6",
                                "--event", "laplace:scale=10")[0])
        self.scenario("p7_pld_price_100_events", round(1000 * statistics.median(pld), 1),
                      round(1000 * statistics.median(one), 1), "ms",
                      ("<=", 50), goal_on_measured=True,
                      note="measured includes dpqctl's process start (the baseline's whole time)",
                      baseline_is="dpqctl price, one event, basic accountant (process start + RPC)")


def run_query_10m(args, size, rows):
    """p1 and p5 through query_10m_bench.py (its own dpqd and cluster); returns its summary."""
    out = os.path.join(args.work_dir, "query_%d.json" % rows)
    argv = [sys.executable, os.path.join(HERE, "query_10m_bench.py"), "--bin-dir", args.bin_dir,
            "--rows", str(rows), "--units", str(max(1, rows // 10)),
            "--ingest-reps", str(size["p1_ingest_reps"]), "--reps", str(size["p1_reps"]),
            "--window-reps", "1", "--warmup", str(size["p1_warmup"]), "--json-out", out]
    if args.tmp_dir:
        argv += ["--tmp-dir", args.tmp_dir]
    log("== p1/p5 at %d rows: %s" % (rows, " ".join(argv[2:])))
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def p1_p5(args, size, bench):
    rows_series = []
    for rows in size["p1_rows"]:
        doc = run_query_10m(args, size, rows)
        summary = {e["measure"]: e for e in doc["summary"]}
        q = {m: statistics.median(t) for m, t in doc["queries"].items()}
        label = rows_label(rows)
        ing = doc["ingest"]
        dpq_s, psql_s = statistics.median(ing["dpq_s"]), statistics.median(ing["psql_s"])
        bench.scenario("p5_ingest_%s" % label, round(rows / dpq_s), round(rows / psql_s), "rows/s",
                       (">=", 0.8), rows=rows, dpq_s=round(dpq_s, 3), psql_s=round(psql_s, 3),
                       baseline_is="psql \\copy into a plain table")
        dpq, same = q["dpq sum K=5 (rank)"], q["psql same SQL (rank)"]
        plain = q["psql plain clamped sum (plain table)"]
        strict = summary["sum K=5 dpqd (rank) / identical SQL via psql"]["strict"]
        bench.scenario("p1_dp_sum_%s" % label, round(dpq, 4), round(same, 4), "s", ("<=", 1.10),
                       rows=rows, strict_ratio=strict,
                       baseline_is="the SQL dpqd ran, via psql (process start included)")
        bench.scenario("p1_dp_sum_vs_clamped_sum_%s" % label, round(dpq, 4), round(plain, 4), "s",
                       ("<=", 1.3), rows=rows,
                       baseline_is="plain clamped sum over a plain table, no bounding, via psql")
        rows_series.append((rows, dpq, same, plain, dpq_s, psql_s))
        bench.memory_during_ingest = doc.get("memory")
    bench.series["rows"] = rows_series


def machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {"host": socket.gethostname(), "cpus": os.cpu_count(), "cpu_model": model,
            "memory_gb": round(mem_kb / 1048576, 1), "kernel": platform.release(),
            "python": platform.python_version()}


def write_plots(series, stem):
    """gnuplot SVGs beside the results: against clients, rows and history. Returns their names."""
    if not shutil.which("gnuplot"):
        log("gnuplot not found (deploy/install-deps.sh installs gnuplot-nox): no plots")
        return []
    made = []

    def plot(suffix, data_lines, script):
        dat = stem + "-" + suffix + ".dat"
        with open(dat, "w") as f:
            f.write("\n".join(data_lines) + "\n")
        # SVG for the README, PNG for viewers without SVG support.
        for ext, terminal in (("svg", "svg size 900,420 dynamic font 'sans,11' background '#ffffff'"),
                              ("png", "pngcairo size 900,420 font 'sans,10' background '#ffffff'")):
            out = "%s-%s.%s" % (stem, suffix, ext)
            common = "set terminal %s\nset output '%s'\nset key left top\nset grid\n" % (terminal, out)
            subprocess.run(["gnuplot"], input=common + script.replace("DAT", dat), text=True,
                           check=True, capture_output=True)
            made.append(os.path.basename(out))
        os.unlink(dat)

    if series.get("clients"):
        plot("clients", ["%d %g %g %g %g %g" % tuple(r) for r in series["clients"]],
             "set multiplot layout 1,2\n"
             "set title 'debits/s on one hot dataset'\nset xlabel 'clients'\nset logscale x 2\n"
             "plot 'DAT' u 1:2 w lp t 'dpqd over gRPC', '' u 1:3 w lp t 'pgbench single-statement'\n"
             "set title 'latency (ms)'\nset logscale y\n"
             "plot 'DAT' u 1:4 w lp t 'dpqd p50', '' u 1:5 w lp t 'dpqd p99', "
             "'' u 1:6 w lp t 'pgbench p50'\nunset multiplot\n")
    if series.get("rows"):
        plot("rows", ["%d %g %g %g %g %g" % tuple(r) for r in series["rows"]],
             "set multiplot layout 1,2\nset logscale xy\nset xlabel 'rows'\n"
             "set title 'DP sum K=5 (s)'\n"
             "plot 'DAT' u 1:2 w lp t 'dpqd over gRPC', '' u 1:3 w lp t 'same SQL via psql', "
             "'' u 1:4 w lp t 'plain clamped sum'\n"
             "set title 'CSV ingest (s)'\n"
             "plot 'DAT' u 1:5 w lp t 'dpqctl dataset load', '' u 1:6 w lp t 'psql \\\\copy'\n"
             "unset multiplot\n")
    if series.get("history"):
        lines, accts = [], []
        for acct in ACCOUNTANTS:
            rows = [r for r in series["history"] if r[0] == acct]
            if rows:
                accts.append(acct)
                lines += ["%d %g %g" % tuple(r[1:4]) for r in rows] + ["", ""]
        plot("history", lines,
             "set title 'p50 of one debited count query (ms) vs prior allocations'\n"
             "set xlabel 'allocations already on the ledger (+1, log scale)'\nset logscale x\n"
             "plot " + ", ".join("'DAT' index %d u ($1+1):2 w lp t '%s'" % (i, a)
                                 for i, a in enumerate(accts)) + "\n")
    return made


def print_table(scenarios):
    header = ("scenario", "measured", "baseline", "unit", "ratio", "goal", "verdict")
    rows = [header]
    for e in scenarios:
        def fmt(v):
            return "" if v is None else ("%.3g" % v if isinstance(v, float) else str(v))
        verdict = "" if "met" not in e else ("met" if e["met"] else "MISSED")
        rows.append((e["name"], fmt(e["measured"]), fmt(e["baseline"]), e["unit"], fmt(e["ratio"]),
                     e.get("goal", ""), verdict))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(str(c).ljust(w) if i in (0, 3, 5, 6) else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(r, widths))).rstrip())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", required=True, help="folder of dpqd, dpqctl and dpq-bench")
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks the tools, not speed")
    p.add_argument("--out-dir", required=True, help="where the results JSON and plots go")
    p.add_argument("--p1-rows", default=None,
                   help="comma-separated row counts for p1/p5 (default 1000000,10000000)")
    p.add_argument("--skip-p1", action="store_true", help="leave out p1/p5 (query_10m_bench)")
    p.add_argument("--only", default="p1,p2,p3,p4,p8,p9",
                   help="comma-separated scenario groups to run: p1 (with p5), p2 (with p6), p3, "
                        "p4 (with p7), p8, p9 (sharded; as root); default all")
    p.add_argument("--clients", default=None,
                   help="comma-separated client counts for p2 (default 1,8,32,64; quick 1,4)")
    p.add_argument("--random-datasets", type=int, default=None,
                   help="datasets of p2's random-dataset pass (default 100; 0 leaves it out)")
    p.add_argument("--p3-pairs", type=int, default=None,
                   help="alternating dpqd/pgbench pairs of p3 runs (default 2), median reported")
    p.add_argument("--p8-rows", type=int, default=None,
                   help="visits rows of p8's join (default 1000000; quick 10000)")
    p.add_argument("--tmp-dir", default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--dpqd-arg", action="append", default=[], metavar="FLAG",
                   help="one more dpqd flag (repeatable), e.g. --dpqd-arg=--db-pool-size=32, "
                        "to compare settings side by side; recorded in the results' dpqd_flags")
    args = p.parse_args()
    args.only = set(x.strip() for x in args.only.split(",") if x.strip())
    unknown = args.only - {"p1", "p2", "p3", "p4", "p8", "p9"}
    if unknown:
        p.error("--only: unknown scenario group(s) %s (known: p1, p2, p3, p4, p8, p9)"
                % ", ".join(sorted(unknown)))
    args.psql = os.path.join(PGBIN, "psql")
    # The default 6000/min would cap p2.
    args.dpqd_args = ["--max-queries-per-minute", "0"] + args.dpqd_arg
    size = dict(SIZES["quick" if args.quick else "full"])
    if args.p1_rows:
        size["p1_rows"] = [int(x) for x in args.p1_rows.split(",")]
    if args.clients:
        size["clients"] = [int(x) for x in args.clients.split(",")]
    if args.random_datasets is not None:
        size["random_datasets"] = args.random_datasets
    if args.p3_pairs is not None:
        size["p3_pairs"] = args.p3_pairs
    if args.p8_rows is not None:
        size["p8_rows"] = args.p8_rows
    os.makedirs(args.out_dir, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    stem = os.path.join(args.out_dir, "%s-%s" % (started.strftime("%Y-%m-%d"), socket.gethostname()))

    bench = Scenarios(args, size)
    try:
        bench.run()
    finally:
        bench.stop()
    if not args.skip_p1 and "p1" in args.only:  # after the first dpqd stopped: query_10m_bench starts its own
        args.work_dir = tempfile.mkdtemp(prefix="dpq-run-bench-", dir=args.tmp_dir)
        try:
            p1_p5(args, size, bench)
        finally:
            shutil.rmtree(args.work_dir, ignore_errors=True)

    doc = {"machine": machine(), "date": started.isoformat(timespec="seconds"),
           "quick": args.quick, "seconds": round(
               (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()),
           "conditions": bench.conditions, "postgres": bench.settings,
           "dpqd_flags": args.dpqd_args, "sizes": size, "scenarios": bench.scenarios,
           "series": bench.series}
    doc["plots"] = write_plots(bench.series, stem)
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print()
    print_table(bench.scenarios)
    print("\nresults: %s.json%s" % (stem, "".join("\nplot: " + os.path.join(args.out_dir, x)
                                                  for x in doc["plots"])))
    missed = [e["name"] for e in bench.scenarios if e.get("met") is False]
    if missed:
        print("goals missed: %s%s" % (", ".join(missed), " (--quick: not a failure)" if args.quick else ""))
    return 3 if missed and not args.quick else 0


if __name__ == "__main__":
    sys.exit(main())
