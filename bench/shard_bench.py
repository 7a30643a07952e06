"""p9 of bench/run_bench.py: a sharded dataset (docs/scaling.md, section 6) against one server.

Three shard clusters are started on this machine (PostgreSQL 15, as the postgres user: run as
root) and registered with dpqd (`dpqctl shard add`); dpqd's embedded cluster is the coordinator.
The same generated CSV (query_10m_bench.generate_csv: units with 1..19 rows, shuffled) becomes
  one_server: a dataset on the coordinator, and
  sharded:    the same dataset with --shards s1,s2,s3 (hash of the unit, postgres_fdw).

  p9_sharded_dp_sum_<rows>: the DP sum with K = 5 (stored rank: it runs whole on each shard)
      through dpqctl on the sharded dataset, against the same query on the one-server dataset,
      ABBA-interleaved. The shards share this machine's cores with the coordinator, so the ratio
      says what the fan-out costs here, not what separate machines would gain. Reported beside
      it: the rows and bytes the coordinator received from the shards for one query (EXPLAIN
      ANALYZE of the captured statement: each Foreign Scan's actual rows times its row width),
      which must be one partial per shard, not rows.
  p9_sharded_grouped_sum_<rows>: the DP sum grouped by kind (declared keys, K = 5, M = 1): the
      per-query random choice of each person's rows is a window function, which postgres_fdw does
      not ship, so dpqd sends the statement to each shard itself and adds the partials
      (server/store/shard_fan_out.h); against the same query on the one-server dataset, ABBA.
  p9_sharded_load_<rows>: `dpqctl dataset create --shards` (CSV checks, per-unit ranks, staging,
      batched INSERT through postgres_fdw) in rows/s, against psql `\\copy` of the same file into
      a partitioned table of the same shape with foreign partitions on the same shards (which
      PostgreSQL 15 sends as one remote INSERT per row). The \\copy baseline loads the first
      `copy_rows` rows only when the file is larger (it is slow); both are rates.
"""

import json
import os
import statistics
import sys
import time

import join_bench
import query_10m_bench as q10

sys.path.insert(0, os.path.join(q10.REPO_ROOT, "tests", "e2e"))
import pg_cluster  # noqa: E402  (the e2e tests' throwaway cluster, run as the postgres user)

SHARDS = ("s1", "s2", "s3")
# Grouped by kind over its declared values: a shape that runs on each shard by dpqd's fan-out.
GROUPED = ("--group-by", "kind", "--keys", "visit,call,lab,refill")
PASSWORD = "bench-shard-pw-0041"


def start_shard(bench, name):
    root = os.path.join(bench.tmp, "shard-" + name)
    os.makedirs(root)
    cluster = pg_cluster.start_shard_cluster(root, "shard_user", PASSWORD)
    bench.ctl("shard", "add", name, "--url", "postgresql://shard_user:%s@/dpq?host=%s&port=%d"
              % (PASSWORD, cluster.socket_dir, cluster.port))
    return cluster


def create(bench, name, csv, shards=()):
    extra = ["--shards", ",".join(shards)] if shards else []
    dt, doc = bench.ctl("dataset", "create", name, "--csv", csv, "--privacy-unit", "unit",
                        "--type", "unit=integer", "--type", "amount=double", "--type",
                        "kind=text", "--bounds", "amount=%d:%d" % (q10.LOWER, q10.UPPER), *extra)
    bench.ctl("budget", "set", name, "--epsilon", "1000000", "--delta", "0.001")
    bench.ctl("grant", "bench", name)
    return dt, doc["rows_loaded"]


def copy_baseline(bench, shards, csv, rows, copy_rows):
    """psql \\copy into a partitioned table with one foreign partition per shard; rows/s."""
    path = csv
    if copy_rows < rows:
        path = csv + ".head"
        with open(csv) as src, open(path, "w") as dst:
            for i, line in enumerate(src):
                if i > copy_rows:
                    break
                dst.write(line)
    columns = "unit bigint, amount double precision, kind text"
    statements = ["CREATE TABLE bench_copy (%s) PARTITION BY HASH (unit)" % columns]
    for i, (name, cluster) in enumerate(shards):
        cluster.psql("CREATE TABLE public.bench_copy (%s); GRANT ALL ON public.bench_copy TO "
                     "shard_user" % columns)
        statements.append(
            "CREATE FOREIGN TABLE bench_copy_%s PARTITION OF bench_copy FOR VALUES WITH "
            "(MODULUS %d, REMAINDER %d) SERVER dpq_shard_%s OPTIONS (schema_name 'public', "
            "table_name 'bench_copy', batch_size '1000')" % (name, len(shards), i, name))
    bench.psql("; ".join(statements))
    dt, _ = bench.psql("\\copy bench_copy FROM '%s' CSV HEADER" % path)
    loaded = sum(int(c.psql("SELECT count(*) FROM public.bench_copy")) for _, c in shards)
    return loaded / dt, loaded, dt


def received(bench, statement):
    """Rows and bytes (actual rows times row width) the coordinator's Foreign Scans returned."""
    _, out = bench.psql("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) " + statement)
    rows = width_bytes = scans = 0
    stack = [json.loads(out)[0]["Plan"]]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if node["Node Type"] == "Foreign Scan":
            scans += 1
            rows += node["Actual Rows"] * node.get("Actual Loops", 1)
            width_bytes += node["Actual Rows"] * node["Plan Width"]
    return scans, rows, width_bytes


def p9_sharded(bench, rows, label, reps, warmup, copy_rows):
    """Runs p9 on `bench` (run_bench.Scenarios); `label` names the row count."""
    if os.geteuid() != 0:
        q10.log("== p9 skipped: the shard clusters run as the postgres user (run as root)")
        return
    t_start = time.perf_counter()
    q10.log("== p9: a dataset sharded over 3 PostgreSQL servers vs one server")
    conditions_start = q10.load_conditions()
    csv = os.path.join(bench.tmp, "p9_%d.csv" % rows)
    q10.generate_csv(csv, rows, max(1, rows // 10), 20261206)
    clusters = []
    try:
        for name in SHARDS:
            clusters.append((name, start_shard(bench, name)))
        create(bench, "p9_one", csv)
        load_s, loaded = create(bench, "p9_sharded", csv, SHARDS)
        q10.log("  sharded load: %d rows in %.1f s" % (loaded, load_s))
        copy_rate, copied, copy_s = copy_baseline(bench, clusters, csv, rows, copy_rows)
        q10.log("  \\copy baseline: %d rows in %.1f s" % (copied, copy_s))
        bench.psql("CHECKPOINT")

        def dp_sum(dataset, extra=()):
            def run():
                dt, doc = bench.ctl("query", dataset, "--aggregate", "sum", "--column", "amount",
                                    "--max-contributions", q10.K, *extra, "--epsilon",
                                    bench.next_epsilon(), token=bench.token)
                if doc.get("cached"):
                    raise RuntimeError("p9: a cached answer in a benchmark run: %s" % doc)
                return dt
            return run

        sharded_id = bench.psql("SELECT id FROM datasets WHERE name = 'p9_sharded'")[1]
        exact = q10.extract_scan_sql(bench.server_log_of(dp_sum("p9_sharded")),
                                     "dpq_data.ds_%s_%s" % (sharded_id, SHARDS[0]))
        scans, rows_in, bytes_in = received(bench, exact)
        q10.log("  coordinator received %d rows, %d bytes from %d foreign scans"
                % (rows_in, bytes_in, scans))
        methods = {"one server": dp_sum("p9_one"), "3 shards": dp_sum("p9_sharded")}
        wall, _ = join_bench.abba(methods, reps, warmup, "p9")
        one, sharded = wall["one server"], wall["3 shards"]
        grouped = {"one server": dp_sum("p9_one", GROUPED),
                   "3 shards": dp_sum("p9_sharded", GROUPED)}
        grouped_wall, _ = join_bench.abba(grouped, reps, warmup, "p9 grouped")
        grouped_one, grouped_sharded = grouped_wall["one server"], grouped_wall["3 shards"]
        common = dict(rows=rows, shards=len(SHARDS), reps=reps, warmup=warmup, order="ABBA",
                      conditions_start=conditions_start, conditions_end=q10.load_conditions(),
                      seconds=round(time.perf_counter() - t_start, 1))
        bench.scenario("p9_sharded_dp_sum_%s" % label, round(statistics.median(sharded), 4),
                       round(statistics.median(one), 4), "s",
                       pair_ratios=join_bench.pair_ratios(sharded, one),
                       sharded=join_bench.spread(sharded), one_server=join_bench.spread(one),
                       foreign_scans=scans, received_rows=rows_in, received_bytes=bytes_in,
                       partials_only=(rows_in == scans == len(SHARDS)), sql=exact,
                       baseline_is="the same DP sum through dpqd on one server's table", **common)
        bench.scenario("p9_sharded_grouped_sum_%s" % label,
                       round(statistics.median(grouped_sharded), 4),
                       round(statistics.median(grouped_one), 4), "s",
                       pair_ratios=join_bench.pair_ratios(grouped_sharded, grouped_one),
                       sharded=join_bench.spread(grouped_sharded),
                       one_server=join_bench.spread(grouped_one), query=" ".join(GROUPED),
                       baseline_is="the same grouped DP sum through dpqd on one server's table",
                       **common)
        bench.scenario("p9_sharded_load_%s" % label, round(loaded / load_s), round(copy_rate),
                       "rows/s", load_s=round(load_s, 2), copy_rows=copied,
                       copy_s=round(copy_s, 2),
                       baseline_is="psql \\copy into a partitioned table of foreign partitions on "
                                   "the same shards", **common)
    finally:
        for _, cluster in clusters:
            cluster.stop()
