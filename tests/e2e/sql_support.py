"""Shared by the DP SQL end-to-end tests: the demo datasets as dpq datasets AND as plain tables of
the same embedded PostgreSQL (schema `truth`), so each test compares dpq's answer at epsilon 1e6
with PostgreSQL's exact answer on the same clamped, bounded rows."""

import os
import shutil
import subprocess
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

needs_psql = unittest.skipUnless(
    os.geteuid() == 0 and shutil.which("psql"),
    "needs root (to reach the embedded cluster's socket) and psql")


def psql(dpqd, sql, *extra):
    """Runs `sql` in the embedded cluster's database; returns the unaligned, tuples-only output."""
    proc = subprocess.run(
        ["psql", "-X", "-q", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-h",
         os.path.join(dpqd.data_dir, "run"), "-U", "postgres", "-d", "dpq"] + list(extra) +
        ["-c", sql], check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    return proc.stdout.decode()


def load_truth(dpqd):
    """The demo CSVs as tables truth.slid and truth.colon (empty fields are NULL)."""
    psql(dpqd, "CREATE SCHEMA IF NOT EXISTS truth")
    for name, columns in TRUTH_TABLES.items():
        psql(dpqd, "CREATE TABLE truth.%s (%s)" % (name, columns))
        psql(dpqd, "\\copy truth.%s FROM '%s' WITH (FORMAT csv, HEADER true)" %
             (name, harness.data_file(name + ".csv")))


def truth_rows(dpqd, sql):
    """PostgreSQL's exact rows for `sql` as lists of strings."""
    out = psql(dpqd, sql).strip()
    return [line.split("|") for line in out.splitlines()] if out else []


def create_datasets(dpqd):
    harness.DpqdTestCase.create_slid(dpqd)
    args = ["dataset", "create", "colon", "--csv", harness.data_file("colon.csv"),
            "--privacy-unit", "patient_id"]
    for t in COLON_TYPES:
        args += ["--type", t]
    for b in COLON_BOUNDS:
        args += ["--bounds", b]
    dpqd.ctl(*args)
    for name in ("slid", "colon"):
        # The largest budget a ledger takes and the largest delta a query may ask: answers at
        # epsilon 1e6 are exact to far below the rounding used here.
        dpqd.ctl("budget", "set", name, "--epsilon", 9e6, "--delta", 0.9)
