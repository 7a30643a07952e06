#!/usr/bin/env python3
"""query_10m_bench: the 10M-row ingest and contribution-bounding benchmark (stdlib only).

One run, one durable PostgreSQL cluster, everything side by side:

  1. Ingest of a generated CSV (default 10M rows, 1M privacy units, 1..19 rows each, shuffled):
     `dpqctl dataset load` through a real dpqd (gRPC, CSV validation, per-unit row ranks, COPY)
     against `psql -c "\\copy ... CSV HEADER"` of the same file into an equivalent plain table.
  2. A DP clipped sum with K = 5 through dpqd against the identical SQL run directly with psql.
     The SQL is taken from the PostgreSQL log of a dpqd query (parameters substituted), so it is
     exactly what dpqd runs: the stored-rank filter, and the random window (dpqd is switched to it
     for that part by clearing datasets.has_row_rank).
  3. That DP sum through dpqd against a plain clamped sum with no bounding at all via psql.
  4. A DP count (K = 5, rank filter) through dpqd against SELECT count(*).

Every measurement is the wall time of one client process (dpqctl or psql, both started fresh, both
on the same machine), the median of --reps runs after --warmup runs, with the methods interleaved
so drift hits them alike. dpqd runs its embedded cluster (durable: fsync on; parallel query and
JIT off, as dpqd configures it); psql talks to the same cluster over its unix socket.

  cmake --build build-fast --target dpqd dpqctl
  python3 bench/query_10m_bench.py --bin-dir build-fast/bin          # about 10 minutes
  python3 bench/query_10m_bench.py --bin-dir build-fast/bin --rows 1000000 --units 100000  # quick

Not a test: never registered with ctest. See bench/README.md for the figures.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"
K = 5
LOWER, UPPER = 0, 100


def log(msg):
    print(msg, flush=True)


_last_cpu = None


def cpu_since_last():
    """Shares of all CPU time since the previous call (from /proc/stat): busy (user+system+...) and
    steal (taken by the hypervisor for other guests: this VM is shared)."""
    global _last_cpu
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    prev, _last_cpu = _last_cpu, v
    if prev is None:
        return None
    d = [a - b for a, b in zip(v, prev)]
    total = sum(d[:8]) or 1
    idle = d[3] + d[4]
    return (total - idle - d[7]) / total, d[7] / total


def load_conditions():
    """Load average, compiler processes running now (other people build here), and the busy and
    steal shares of the CPUs since the previous call."""
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    compilers = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                if f.read().strip() in ("cc1plus", "cc1", "ld", "ld.gold", "collect2"):
                    compilers += 1
        except OSError:
            pass
    cpu = cpu_since_last()
    extra = "" if cpu is None else ", cpu busy %.0f%% steal %.0f%%" % (100 * cpu[0], 100 * cpu[1])
    return "load average %s, %d compiler processes%s" % (load, compilers, extra)


def generate_csv(path, rows, units, seed, stride=1):
    """`units` units with 1..(2*mean-1) rows each (uniform, mean rows/units), in shuffled order:
    unit (integer: stride, 2*stride, ...), amount (double, ~1/6 of values above the declared upper
    bound 100), kind (text)."""
    rng = random.Random(seed)
    mean = rows / units
    hi = max(1, int(round(2 * mean - 1)))
    order = []
    for u in range(1, units + 1):
        order.extend([u] * rng.randint(1, hi))
    rng.shuffle(order)
    kinds = ("visit", "call", "lab", "refill")
    rnd = rng.random
    with open(path, "w") as f:
        f.write("unit,amount,kind\n")
        chunk = []
        for u in order:
            chunk.append("%d,%.2f,%s\n" % (u * stride, rnd() * 120, kinds[u & 3]))
            if len(chunk) >= 100000:
                f.write("".join(chunk))
                chunk.clear()
        f.write("".join(chunk))
    return len(order)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(argv, env=None, check=True):
    """Runs argv; returns (wall seconds, stdout)."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env)
    dt = time.perf_counter() - t0
    if check and p.returncode != 0:
        raise RuntimeError("%s failed (exit %d): %s %s" % (" ".join(argv[:6]), p.returncode,
                                                           p.stdout.decode()[-2000:],
                                                           p.stderr.decode()[-2000:]))
    return dt, p.stdout.decode()


class Bench:
    def __init__(self, args):
        self.args = args
        self.dpqd = os.path.join(args.bin_dir, "dpqd")
        self.dpqctl = os.path.join(args.bin_dir, "dpqctl")
        self.tmp = tempfile.mkdtemp(prefix="dpq-q10m-", dir=args.tmp_dir)
        os.chmod(self.tmp, 0o755)  # the cluster runs as "postgres" when we are root
        self.data_dir = os.path.join(self.tmp, "dpq")
        self.proc = None
        self.port = None
        self.analyst_token = None
        self.eps_counter = 0
        self.results = {}

    # -- processes ------------------------------------------------------------------------------

    def start_dpqd(self):
        self.port = free_port()
        metrics = free_port()
        env = dict(os.environ, DPQ_ADMIN_TOKEN=ADMIN_TOKEN)
        self.dpqd_log = os.path.join(self.tmp, "dpqd.log")
        self.proc = subprocess.Popen(
            [self.dpqd, "--data-dir", self.data_dir, "--listen", "127.0.0.1:%d" % self.port,
             "--metrics-listen", "127.0.0.1:%d" % metrics] + list(getattr(self.args, "dpqd_args", [])),
            stdin=subprocess.DEVNULL, stdout=open(self.dpqd_log, "wb"), stderr=subprocess.STDOUT,
            env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if "dpqd listening on" in self.dpqd_text():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError("dpqd did not start:\n" + self.dpqd_text())

    def dpqd_text(self):
        with open(self.dpqd_log, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None
        if not self.args.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def dpqd_memory_kb(self):
        out = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
        return out

    # -- clients --------------------------------------------------------------------------------

    def ctl(self, *args, token=ADMIN_TOKEN, check=True):
        argv = [self.dpqctl, "--server", "127.0.0.1:%d" % self.port, "--token", token, "--json",
                "--timeout", "900"] + [str(a) for a in args]
        dt, out = timed(argv, check=check)
        return dt, (json.loads(out) if out.strip() else {})

    @property
    def url(self):
        return "postgresql:///dpq?host=%s/run&port=5432&user=postgres" % self.data_dir

    def psql(self, sql, check=True):
        dt, out = timed([self.args.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.url,
                         "-c", sql], check=check)
        return dt, out.strip()

    def psql_query(self, sql):
        """(wall seconds of the psql process, seconds psql's \\timing reports for the statement:
        the round trip without process start and connection)."""
        dt, out = timed([self.args.psql, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", self.url,
                         "-c", "\\timing on", "-c", sql])
        ms = re.findall(r"^Time: ([0-9.]+) ms", out, re.M)
        return dt, float(ms[-1]) / 1000 if ms else None

    def next_epsilon(self):
        # A fresh epsilon per query: the fingerprint differs, so the result cache never answers.
        self.eps_counter += 1
        return "%.6f" % (1 + self.eps_counter * 1e-6)

    # -- the run --------------------------------------------------------------------------------

    def run(self):
        a = self.args
        log("conditions at start: %s" % load_conditions())
        self.results["conditions_start"] = load_conditions()
        csv = os.path.join(self.tmp, "data.csv")
        t0 = time.perf_counter()
        rows = generate_csv(csv, a.rows, a.units, a.seed, a.unit_stride)
        log("generated %d rows of %d units (%.0f MB) in %.1f s" %
            (rows, a.units, os.path.getsize(csv) / 1e6, time.perf_counter() - t0))
        header_only = os.path.join(self.tmp, "header.csv")
        with open(header_only, "w") as f:
            f.write("unit,amount,kind\n")
        self.start_dpqd()
        self.log_parameters()
        self.psql("CREATE SCHEMA bench")
        log("cluster: " + self.psql(
            "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN "
            "('fsync','synchronous_commit','shared_buffers','max_parallel_workers_per_gather','jit',"
            "'server_version','work_mem')")[1])

        # 1. Ingest.
        dpq_times, psql_times = [], []
        mem_before = self.dpqd_memory_kb()
        for i in range(a.ingest_reps):
            name, table = "load_%d" % i, "bench.plain_%d" % i
            self.ctl("dataset", "create", "--infer-types", name, "--csv", header_only, "--privacy-unit", "unit",
                     "--type", "unit=integer", "--type", "amount=double", "--type", "kind=text",
                     "--bounds", "amount=%d:%d" % (LOWER, UPPER))
            self.psql("CREATE TABLE %s (unit bigint, amount double precision, kind text)" % table)
            for method in (("dpq", "psql") if i % 2 == 0 else ("psql", "dpq")):
                self.psql("CHECKPOINT")
                if method == "dpq":
                    dt, doc = self.ctl("dataset", "load", name, "--csv", csv)
                    assert doc.get("rows_loaded") == rows, doc
                    dpq_times.append(dt)
                else:
                    dt, _ = self.psql("\\copy %s FROM '%s' WITH (FORMAT csv, HEADER true)" % (table, csv))
                    psql_times.append(dt)
                log("  ingest %d %-4s %6.2f s  (%s)" % (i, method, dt, load_conditions()))
            if i + 1 < a.ingest_reps:  # keep the last pair for the queries
                self.ctl("dataset", "drop", name, "--yes")
                self.psql("DROP TABLE %s" % table)
        mem_after = self.dpqd_memory_kb()
        ranks = re.findall(r"rank counters held ([0-9.]+) MB", self.dpqd_text())
        self.results["ingest"] = {"dpq_s": dpq_times, "psql_s": psql_times}
        self.results["memory"] = {"dpqd_kb_before": mem_before, "dpqd_kb_after": mem_after,
                                  "rank_counters_mb": ranks[-1] if ranks else None}
        log("dpqd memory: VmHWM %d -> %d MB; rank counters (dpqd log) %s MB" %
            (mem_before["VmHWM"] // 1024, mem_after["VmHWM"] // 1024, ranks[-1] if ranks else "?"))

        if a.ingest_only:
            ratio = statistics.median(psql_times) / statistics.median(dpq_times)
            log("ingest speed ratio dpq/psql: median %.2f (%.1f s vs %.1f s), min-based %.2f" % (
                ratio, statistics.median(dpq_times), statistics.median(psql_times),
                min(psql_times) / min(dpq_times)))
            return
        name, plain = "load_%d" % (a.ingest_reps - 1), "bench.plain_%d" % (a.ingest_reps - 1)
        _, ds_id = self.psql("SELECT id FROM datasets WHERE name = '%s'" % name)
        dpq_table = "dpq_data.ds_%s" % ds_id
        # Same state for both tables: hint bits set, visibility map and statistics current.
        for t in (dpq_table, plain):
            self.psql("VACUUM (ANALYZE) %s" % t)
        self.psql("CHECKPOINT")
        log("table sizes: dpq %s, plain %s" % (
            self.psql("SELECT pg_size_pretty(pg_table_size('%s'))" % dpq_table)[1],
            self.psql("SELECT pg_size_pretty(pg_table_size('%s'))" % plain)[1]))

        self.analyst_token = self.ctl("analyst", "create", "bench")[1]["token"]
        self.ctl("grant", "bench", name)
        self.ctl("budget", "set", name, "--epsilon", "1000000")

        sum_args = ("query", name, "--aggregate", "sum", "--column", "amount",
                    "--max-contributions", K)
        count_args = ("query", name, "--aggregate", "count", "--max-contributions", K)

        def dpq_query(args):
            dt, doc = self.ctl(*args, "--epsilon", self.next_epsilon(), token=self.analyst_token)
            assert not doc.get("cached"), doc
            return dt

        # The SQL dpqd runs, from the server log (log_min_duration_statement = 0 for a moment).
        sql = self.capture_sql(name, ds_id, sum_args, count_args)
        plain_sum = "SELECT sum(least(greatest(amount, %d), %d)) FROM %%s" % (LOWER, UPPER)

        # 2-4. Queries: fast path (stored rank) block, then the window block.
        fast = {
            "dpq sum K=5 (rank)": lambda: dpq_query(sum_args),
            "psql same SQL (rank)": lambda: self.psql_query(sql["sum_rank"]),
            "psql plain clamped sum (dpq table)": lambda: self.psql_query(plain_sum % dpq_table),
            "psql plain clamped sum (plain table)": lambda: self.psql_query(plain_sum % plain),
            "dpq count K=5 (rank)": lambda: dpq_query(count_args),
            "psql same SQL count (rank)": lambda: self.psql_query(sql["count_rank"]),
            "psql count(*) (dpq table)": lambda: self.psql_query("SELECT count(*) FROM %s" % dpq_table),
            "psql count(*) (plain table)": lambda: self.psql_query("SELECT count(*) FROM %s" % plain),
        }
        self.results["queries"], self.results["in_session"] = self.measure(fast)
        self.psql("UPDATE datasets SET has_row_rank = false WHERE name = '%s'" % name)
        window = {
            "dpq sum K=5 (window)": lambda: dpq_query(sum_args),
            "psql same SQL (window)": lambda: self.psql_query(sql["sum_window"]),
        }
        wall, session = self.measure(window, reps=a.window_reps)
        self.results["queries"].update(wall)
        self.results["in_session"].update(session)
        self.psql("UPDATE datasets SET has_row_rank = true WHERE name = '%s'" % name)
        self.results["conditions_end"] = load_conditions()
        self.results["sql"] = sql
        self.report()

    def log_parameters(self):
        """dpqd starts its cluster with log_error_verbosity = terse on the command line, which
        drops the "DETAIL: parameters: ..." lines server_log_of() needs. A database setting
        outranks the command line for new sessions: set it, then restart dpqd (new pool)."""
        self.psql("ALTER DATABASE dpq SET log_error_verbosity = 'default'")
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)
        self.proc = None
        self.start_dpqd()

    def server_log_of(self, action):
        """Runs action() with every statement logged (their parameters too, after
        log_parameters()); returns the PostgreSQL log it added."""
        pg_log = os.path.join(self.data_dir, "log", "postgres.log")
        self.psql("ALTER SYSTEM SET log_min_duration_statement = 0")
        self.psql("SELECT pg_reload_conf()")
        time.sleep(0.5)
        try:
            start = os.path.getsize(pg_log)
            action()
            time.sleep(0.3)
            with open(pg_log, errors="replace") as f:
                f.seek(start)
                return f.read()
        finally:
            self.psql("ALTER SYSTEM RESET log_min_duration_statement")
            self.psql("SELECT pg_reload_conf()")

    def capture_sql(self, name, ds_id, sum_args, count_args):
        out = {}
        for key, args, rank in (("sum_rank", sum_args, True), ("count_rank", count_args, True),
                                ("sum_window", sum_args, False)):
            if not rank:
                self.psql("UPDATE datasets SET has_row_rank = false WHERE name = '%s'" % name)
            try:
                text = self.server_log_of(lambda: self.ctl(*args, "--epsilon", self.next_epsilon(),
                                                           token=self.analyst_token))
            finally:
                if not rank:
                    self.psql("UPDATE datasets SET has_row_rank = true WHERE name = '%s'" % name)
            out[key] = extract_scan_sql(text, "dpq_data.ds_%s" % ds_id)
        for key, text in out.items():
            log("SQL %s: %s" % (key, text))
        assert "_dpq_rank AS rn" in out["sum_rank"] and "random()" in out["sum_window"], out
        return out

    def measure(self, methods, reps=None):
        reps = self.args.reps if reps is None else reps
        """Wall times per method, and psql's in-session (\\timing) times for the psql methods."""
        times = {m: [] for m in methods}
        session = {}
        names = list(methods)
        for r in range(self.args.warmup + reps):
            # Rotate the order so that no method always runs first or after the same one.
            order = names[r % len(names):] + names[:r % len(names)]
            for m in order:
                got = methods[m]()
                dt, in_session = got if isinstance(got, tuple) else (got, None)
                if r >= self.args.warmup:
                    times[m].append(dt)
                    if in_session is not None:
                        session.setdefault(m, []).append(in_session)
            log("  rep %d done (%s)" % (r, load_conditions()))
        for m in names:
            extra = ""
            if m in session:
                extra = "; in-session median %.3f s" % statistics.median(session[m])
            log("  %-38s median %7.3f s, min %7.3f s  (%s)%s" % (
                m, statistics.median(times[m]), min(times[m]), ", ".join("%.3f" % t for t in times[m]),
                extra))
        return times, session

    def report(self):
        q = {m: statistics.median(t) for m, t in self.results["queries"].items()}
        qmin = {m: min(t) for m, t in self.results["queries"].items()}
        qs = {m: statistics.median(t) for m, t in self.results["in_session"].items()}
        ing = self.results["ingest"]
        dpq_ingest, psql_ingest = statistics.median(ing["dpq_s"]), statistics.median(ing["psql_s"])
        # (label, numerator, denominator, target): ratio = numerator / denominator of median times.
        # "strict" divides dpqd's wall time (process start, gRPC, debit included) by psql's
        # in-session time of the statement alone (no process start, no connection).
        checks = [
            ("sum K=5 dpqd (rank) / identical SQL via psql", "dpq sum K=5 (rank)",
             "psql same SQL (rank)", 1.10),
            ("sum K=5 dpqd (window) / identical SQL via psql", "dpq sum K=5 (window)",
             "psql same SQL (window)", 1.10),
            ("sum K=5 dpqd (rank) / plain clamped sum, plain table", "dpq sum K=5 (rank)",
             "psql plain clamped sum (plain table)", 1.3),
            ("sum K=5 dpqd (rank) / plain clamped sum, same table", "dpq sum K=5 (rank)",
             "psql plain clamped sum (dpq table)", 1.3),
            ("count K=5 dpqd (rank) / identical SQL via psql", "dpq count K=5 (rank)",
             "psql same SQL count (rank)", None),
            ("count K=5 dpqd (rank) / SELECT count(*), plain table", "dpq count K=5 (rank)",
             "psql count(*) (plain table)", None),
            ("count K=5 dpqd (rank) / SELECT count(*), same table", "dpq count K=5 (rank)",
             "psql count(*) (dpq table)", None),
            ("window SQL / plain clamped sum (both psql, plain table)", "psql same SQL (window)",
             "psql plain clamped sum (plain table)", None),
        ]
        # "min ratio": the ratio of the fastest runs. Interference from other work only ever adds
        # time, so on a shared machine the minima estimate the uncontended cost best.
        summary = []
        ratio = psql_ingest / dpq_ingest
        summary.append(("ingest: dataset load speed / psql \\copy speed", ratio,
                        min(ing["psql_s"]) / min(ing["dpq_s"]), None, ">= 0.8",
                        "met" if ratio >= 0.8 else "NOT met",
                        "%.1f s vs %.1f s" % (dpq_ingest, psql_ingest)))
        for label, num, den, target in checks:
            ratio = q[num] / q[den]
            strict = q[num] / qs[den] if (den in qs and not num.startswith("psql")) else None
            if num.startswith("psql") and num in qs and den in qs:
                ratio = qs[num] / qs[den]  # both psql: compare the statements alone
            verdict = "" if target is None else ("met" if ratio <= target else "NOT met")
            if target is not None and strict is not None:
                verdict += " (strict: %s)" % ("met" if strict <= target else "not met")
            summary.append((label, ratio, qmin[num] / qmin[den], strict,
                            "<= %.2f" % target if target else "(report)", verdict,
                            "%.3f s vs %.3f s" % (q[num], q[den])))
        log("\n== summary (medians; %s at the end) ==" % self.results["conditions_end"])
        log("| measure | ratio | min ratio | strict ratio | target | verdict (median ratio) | median times |")
        log("|---|---:|---:|---:|---|---|---|")
        for label, ratio, min_ratio, strict, target, verdict, detail in summary:
            log("| %s | %.2f | %.2f | %s | %s | %s | %s |" % (
                label, ratio, min_ratio, "" if strict is None else "%.2f" % strict, target, verdict, detail))
        self.results["summary"] = [
            dict(zip(("measure", "ratio", "min_ratio", "strict", "target", "verdict", "times"), row))
            for row in summary]
        if self.args.json_out:
            with open(self.args.json_out, "w") as f:
                json.dump(self.results, f, indent=1)


def round_trips_and_statements(log_text):
    """From a PostgreSQL log written with log_min_duration_statement = 0: (round trips, SQL
    statements, each trip's server-side duration and the first 100 characters of its SQL). A `statement:` line is one simple Query message (its ';'-separated commands count
    one by one); an `execute` line is one extended-protocol Execute, sent with its Parse and Bind
    in the same trip (their own `parse`/`bind` lines are not counted again)."""
    trips = statements = 0
    texts = []
    for line in log_text.splitlines():
        m = re.search(r"duration: ([0-9.]+) ms  (statement|execute [^:]*): (.*)$", line)
        if not m:
            continue
        trips += 1
        texts.append("%7.3f ms  %s" % (float(m.group(1)), m.group(3)[:100]))
        if m.group(2) == "statement":
            statements += sum(1 for part in m.group(3).split(";") if part.strip())
        else:
            statements += 1
    return trips, statements, texts


def extract_scan_sql(log_text, table):
    """The scan statement of one dpqd query from a PostgreSQL log (log_min_duration_statement = 0),
    with its bound parameters substituted as literals (every parameter carries an explicit cast)."""
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"execute <unnamed>: (SELECT .*)$", line)
        if not m or ("FROM " + table) not in m.group(1):
            continue
        stmt = m.group(1)
        params = {}
        for follow in lines[i + 1:i + 3]:
            if "parameters:" in follow:
                for num, val in re.findall(r"\$(\d+) = '((?:[^']|'')*)'", follow):
                    params[num] = "'%s'" % val
        return re.sub(r"\$(\d+)", lambda mm: params[mm.group(1)], stmt)
    raise RuntimeError("no scan statement on %s in the server log:\n%s" % (table, log_text[-3000:]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", default=os.path.join(REPO_ROOT, "build-fast", "bin"),
                   help="directory holding dpqd and dpqctl")
    p.add_argument("--rows", type=int, default=10_000_000, help="rows of the generated CSV (about)")
    p.add_argument("--units", type=int, default=1_000_000, help="privacy units")
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--unit-stride", type=int, default=1,
                   help="unit ids are multiples of this: 1 gives dense ids 1..N (dpqd's rank counters "
                        "use an array), e.g. 1000003 gives sparse ids (its hash table)")
    p.add_argument("--ingest-only", action="store_true", help="stop after the ingest measurements")
    p.add_argument("--ingest-reps", type=int, default=5)
    p.add_argument("--reps", type=int, default=7, help="measured runs per query method")
    p.add_argument("--window-reps", type=int, default=5, help="measured runs of the window SQL")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--tmp-dir", default=None, help="parent of the temporary directory")
    p.add_argument("--psql", default=next((x for x in ("/usr/lib/postgresql/15/bin/psql",) if os.path.exists(x)), "psql"),
                   help="psql binary (not Debian's Perl wrapper /usr/bin/psql, which adds ~0.1 s per start)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    p.add_argument("--json-out", default=None, help="write all measurements to this file")
    args = p.parse_args()
    bench = Bench(args)
    try:
        bench.run()
    finally:
        bench.stop()


if __name__ == "__main__":
    sys.exit(main())
