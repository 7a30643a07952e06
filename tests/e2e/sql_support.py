"""Shared by the DP SQL end-to-end tests: the demo datasets as dpq datasets AND as plain tables of
the same embedded PostgreSQL (schema `truth`), so each test compares dpq's answer at epsilon 1e6
with PostgreSQL's exact answer on the same clamped, bounded rows."""

import atexit
import csv
import datetime
import os
import shutil
import subprocess
import tempfile
import unittest

import harness

COLON_TYPES = ("patient_id=integer", "study=integer", "rx=text", "sex=integer", "age=integer",
               "obstruct=integer", "perfor=integer", "adhere=integer", "nodes=integer",
               "status=integer", "differ=integer", "extent=integer", "surg=integer",
               "node4=integer", "time=integer", "etype=integer")
COLON_BOUNDS = ("age=0:120", "nodes=0:50", "time=0:5000")

TRUTH_TABLES = {
    "slid": ("person_id integer, wages float8, education float8, age integer, sex text, "
             "language text"),
    "colon": ("patient_id integer, study integer, rx text, sex integer, age integer, "
              "obstruct integer, perfor integer, adhere integer, nodes integer, status integer, "
              "differ integer, extent integer, surg integer, node4 integer, time integer, "
              "etype integer"),
}

# Population `trial`, derived from colon.csv (2 rows per patient: etype 1 recurrence, 2 death):
# `patients` (one row per patient, the columns both rows share), `recurrence` and `death` (that
# event's time and status), and the pair `visits` / `doses`, where a unit has several rows on
# both sides (1-4 visits times 1-3 doses for patients 1-60, and 5 x 5 for patient 61, whose
# values are constant so that any K of its joined rows give the same answer). `appointments`
# holds dates: 1-4 per patient 1-60 (5 alike for patient 61), a date `day` and a UTC timestamp
# `at` spread past both declared bounds (dpq reads them clamped: truth.appointments_clamped), some
# empty. `regimens` is a public table: rx -> code, name (Placebo matches no patient).
PATIENT_COLUMNS = ("patient_id", "study", "rx", "sex", "age", "obstruct", "perfor", "adhere",
                   "nodes", "differ", "extent", "surg", "node4")
TRIAL = {
    "patients": (PATIENT_COLUMNS, ("age=0:120", "nodes=0:50"), ("rx=Obs|Lev|Lev+5FU",)),
    "recurrence": (("patient_id", "time", "status"), ("time=0:5000",), ()),
    "death": (("patient_id", "time", "status"), ("time=0:5000",), ()),
    "visits": (("patient_id", "visit", "kind", "score"), ("score=0:10",), ("kind=a|b|c",)),
    "doses": (("patient_id", "dose", "amount"), ("amount=0:5",), ()),
    "appointments": (("patient_id", "slot", "day", "at", "fee"),
                     ("day=2026-01-01:2026-06-30", "at=2026-03-01T00:00:00Z:2026-03-14T23:59:59Z",
                      "fee=0:100"), ()),
}
# The rows of truth.appointments as dpq reads them: each date clamped into its bounds, NULL kept.
APPOINTMENTS_CLAMPED = (
    "CREATE VIEW truth.appointments_clamped AS SELECT patient_id, slot, fee, "
    "CASE WHEN day IS NULL THEN NULL ELSE least(greatest(day, date '2026-01-01'), "
    "date '2026-06-30') END AS day, "
    "CASE WHEN at IS NULL THEN NULL ELSE least(greatest(at, timestamp '2026-03-01 00:00:00'), "
    "timestamp '2026-03-14 23:59:59') END AS at FROM truth.appointments")
REGIMENS = [("Obs", 0, "Observation"), ("Lev", 1, "Levamisole"),
            ("Lev+5FU", 2, "Levamisole+5-FU"), ("Placebo", 3, "Placebo")]
SQL_TYPES = {"text": "text", "integer": "integer", "double": "float8", "date": "date",
             "timestamp": "timestamp"}
TRIAL_TYPES = {"rx": "text", "kind": "text", "score": "double", "amount": "double",
               "name": "text", "day": "date", "at": "timestamp", "fee": "double"}
TRIAL_COLUMNS = dict([(t, spec[0]) for t, spec in TRIAL.items()] +
                     [("regimens", ("rx", "code", "name"))])
MANY_ROWS_UNIT = 61
_trial_dir = []


def trial_type(column):
    return TRIAL_TYPES.get(column, "integer")


def appointment_rows():
    """Deterministic dates from 2025-12-20 (before the lower bound) to 2026-07-07 (after the
    upper), timestamps from 2026-02-25 to 2026-03-18 (both bounds cut), about 1 in 12 empty."""
    rows = []
    day0 = datetime.date(2025, 12, 20)
    at0 = datetime.datetime(2026, 2, 25)
    for p in range(1, MANY_ROWS_UNIT):
        for i in range(1 + p % 4):
            day = "" if (p + i) % 13 == 0 else str(day0 + datetime.timedelta((11 * p + 17 * i) % 200))
            at = "" if (3 * p + i) % 11 == 0 else (at0 + datetime.timedelta(
                hours=(37 * p + 13 * i) % (22 * 24), minutes=(7 * p) % 60)).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
            rows.append([p, i + 1, day, at, (3 * p + 5 * i) % 120])
    for k in range(5):
        rows.append([MANY_ROWS_UNIT, k + 1, "2026-03-15", "2026-03-05T12:00:00Z", 40])
    return rows


def trial_rows():
    """{table: rows} of the population trial and of regimens."""
    with open(harness.data_file("colon.csv")) as f:
        colon = list(csv.DictReader(f))
    first = {}
    for r in colon:
        first.setdefault(r["patient_id"], r)
    tables = {
        "patients": [[r[c] for c in PATIENT_COLUMNS] for r in first.values()],
        "recurrence": [[r["patient_id"], r["time"], r["status"]] for r in colon if r["etype"] == "1"],
        "death": [[r["patient_id"], r["time"], r["status"]] for r in colon if r["etype"] == "2"],
        "visits": [], "doses": [], "appointments": appointment_rows(),
        "regimens": [list(r) for r in REGIMENS],
    }
    for p in range(1, MANY_ROWS_UNIT):
        for i in range(1 + p % 4):
            tables["visits"].append([p, i + 1, "abc"[(p + i) % 3], ((7 * p + 3 * i) % 11) * 0.5])
        for j in range(1 + p % 3):
            tables["doses"].append([p, j + 1, ((5 * p + 2 * j) % 7) * 0.25 + 0.5])
    for k in range(5):
        tables["visits"].append([MANY_ROWS_UNIT, k + 1, "a", 7.5])
        tables["doses"].append([MANY_ROWS_UNIT, k + 1, 2.0])
    return tables


def trial_csv(name):
    """Path of the CSV of trial table `name` (all written once per process, to a temp dir)."""
    if not _trial_dir:
        folder = tempfile.mkdtemp(prefix="dpq-trial-")
        atexit.register(shutil.rmtree, folder, True)
        for table, rows in trial_rows().items():
            with open(os.path.join(folder, table + ".csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(TRIAL_COLUMNS[table])
                w.writerows(rows)
        _trial_dir.append(folder)
    return os.path.join(_trial_dir[0], name + ".csv")


def create_trial(dpqd):
    """Population trial (its five datasets, budget as create_datasets') and public regimens."""
    dpqd.ctl("population", "create", "trial", "--unit-type", "integer")
    for table, (columns, bounds, categories) in TRIAL.items():
        args = ["dataset", "create", table, "--csv", trial_csv(table), "--population", "trial",
                "--privacy-unit", "patient_id"]
        for c in columns:
            args += ["--type", "%s=%s" % (c, trial_type(c))]
        for b in bounds:
            args += ["--bounds", b]
        for c in categories:
            args += ["--categories", c]
        dpqd.ctl(*args)
    args = ["dataset", "create", "regimens", "--csv", trial_csv("regimens"), "--public"]
    for c in TRIAL_COLUMNS["regimens"]:
        args += ["--type", "%s=%s" % (c, trial_type(c))]
    dpqd.ctl(*args)
    dpqd.ctl("budget", "set", "trial", "--epsilon", 9e6, "--delta", 0.9)


needs_psql = unittest.skipUnless(
    os.geteuid() == 0 and shutil.which("psql"),
    "needs root (to reach the embedded cluster's socket) and psql")


def psql(dpqd, sql, *more):
    """Runs `sql` in the embedded cluster's database (then `more`: further psql arguments, e.g.
    "-c", "..." pairs, run in order); returns the unaligned, tuples-only output."""
    proc = subprocess.run(
        ["psql", "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-h",
         os.path.join(dpqd.data_dir, "run"), "-U", "postgres", "-d", "dpq", "-c", sql] +
        list(more), check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return proc.stdout.decode()


def load_truth(dpqd):
    """The demo CSVs as tables truth.slid and truth.colon, and the trial tables under their names
    (truth.patients, ..., truth.regimens; empty fields are NULL). One psql for all of them: the
    conformance test loads them into a fresh cluster every few cases."""
    tables = [(name, columns, harness.data_file(name + ".csv"))
              for name, columns in TRUTH_TABLES.items()]
    tables += [(name, ", ".join("%s %s" % (c, SQL_TYPES[trial_type(c)]) for c in cols),
                trial_csv(name)) for name, cols in TRIAL_COLUMNS.items()]
    commands = []
    for name, columns, path in tables:
        commands += ["-c", "CREATE TABLE truth.%s (%s)" % (name, columns),
                     "-c", "\\copy truth.%s FROM '%s' WITH (FORMAT csv, HEADER true)" %
                     (name, path)]
    commands += ["-c", APPOINTMENTS_CLAMPED]
    psql(dpqd, "CREATE SCHEMA IF NOT EXISTS truth", *commands)


def truth_rows(dpqd, sql):
    """PostgreSQL's exact rows for `sql` as lists of strings."""
    out = psql(dpqd, sql).strip()
    return [line.split("|") for line in out.splitlines()] if out else []


def create_datasets(dpqd, shards=()):
    """slid, colon (over `shards` when given: `dpqctl dataset create --shards`) and trial."""
    sharding = ["--shards", ",".join(shards)] if shards else []
    harness.DpqdTestCase.create_slid(dpqd, extra=sharding)
    args = ["dataset", "create", "colon", "--csv", harness.data_file("colon.csv"),
            "--privacy-unit", "patient_id", *sharding]
    for t in COLON_TYPES:
        args += ["--type", t]
    for b in COLON_BOUNDS:
        args += ["--bounds", b]
    dpqd.ctl(*args)
    for name in ("slid", "colon"):
        # The largest budget a ledger takes and the largest delta a query may ask: answers at
        # epsilon 1e6 are exact to far below the rounding used here.
        dpqd.ctl("budget", "set", name, "--epsilon", 9e6, "--delta", 0.9)
    create_trial(dpqd)
