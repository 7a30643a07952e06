#!/usr/bin/python3
"""End-to-end: `dpqctl audit verify` on a long audit chain, measured on the real dpqd.

- 200,000 valid audit rows are written straight into dpqd's database (hashed here exactly as
  server/store/audit_chain.cc does: the verification that follows checks every hash), and the
  ledger's head and spent are pointed at them, as 200,000 debits would have left them.
- `audit verify --full` reads all of them and dpqd's peak RSS (VmHWM, reset through
  /proc/<pid>/clear_refs just before) grows by less than 30 MB; a second full run does not grow it
  further.
- After 5 more queries, the default (incremental) run reads the checkpoint row and the 5 new rows,
  `--full` all of them, and dpq_audit_verify_rows_total{population} adds up what each run read.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROWS = 200000
EPSILON_UNITS = 10 ** 9  # 0.001 in ledger units (1e-12)
LIMIT_KB = 30 * 1024


def _s(text):
    """A length-prefixed string of the canonical encoding (ASCII here: length in bytes)."""
    return "%d:%s" % (len(text), text)


def canonical(dataset_id, seq, principal_id, request_id, fingerprint, result):
    """CanonicalAllocation for a count row whose doubles print the same under %.17g here and
    in C (small integers and 0.5)."""
    fields = [
        "dpq-audit-v1", str(dataset_id), str(seq), _s(request_id), str(principal_id),
        _s("alice"), _s(fingerprint), _s("count"), _s(""), _s("laplace"), str(EPSILON_UNITS),
        "0", "1", "1000", "0", "42", "0.5", "40", "44", "null", "null", "1", _s(""),
        "1", _s(result)]
    return "|".join(fields).encode()


def chain_rows(dataset_id, principal_id):
    """Yields (COPY text line, hash) for rows 1..ROWS of a valid chain."""
    prev = bytes(32)
    result = "r" * 400  # about the size of a grouped query's stored result
    for seq in range(1, ROWS + 1):
        request_id = "bulk-%08d-0000-4000-8000-000000000000" % seq
        fingerprint = "f" * 120 + str(seq)
        digest = hashlib.sha256(prev + canonical(dataset_id, seq, principal_id, request_id,
                                                  fingerprint, result)).digest()
        line = "\t".join([
            str(dataset_id), str(seq), request_id, str(principal_id), "alice", fingerprint,
            "count", "", "laplace", str(EPSILON_UNITS), "0", "1", "1000", "0", "42", "0.5", "40",
            "44", "\\N", "\\N", "1", "\\\\x" + prev.hex(), "\\\\x" + digest.hex(), "", "1",
            result, "f"])
        yield line, digest
        prev = digest


def status_kb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


class AuditVerifyMemoryTest(harness.DpqdTestCase):
    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("psql"),
                         "needs root (the embedded cluster's socket, /proc/<pid>/clear_refs) and psql")
    def test_a_long_chain_is_verified_in_flat_memory_and_then_incrementally(self):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args = ["--audit-verify-seconds=0"]  # only the runs this test asks for
        dpqd.start()
        self.create_slid(dpqd)
        alice = self.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "slid")
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1000)

        def psql(sql, stdin=None):
            return subprocess.run(
                ["psql", "-X", "-q", "-A", "-t", "-h", os.path.join(dpqd.data_dir, "run"),
                 "-U", "postgres", "-d", "dpq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                input=stdin, check=True, capture_output=True, timeout=240).stdout.decode().strip()

        dataset_id = int(psql("SELECT population_id FROM datasets WHERE name = 'slid'"))
        principal_id = int(psql("SELECT id FROM principals WHERE name = 'alice'"))
        started = time.monotonic()
        lines, head = [], None
        for line, head in chain_rows(dataset_id, principal_id):
            lines.append(line)
        psql("\\copy audit (population_id, seq, request_id, principal_id, analyst, fingerprint, "
             "aggregate, column_name, mechanism, epsilon_units, delta_units, sensitivity, "
             "noise_scale, count_noise_scale, value, confidence, ci_lower, ci_upper, clamp_lower, "
             "clamp_upper, max_contributions, prev_hash, hash, events, dataset_version, result, "
             "release_deferred) FROM PSTDIN", stdin=("\n".join(lines) + "\n").encode())
        del lines
        psql("UPDATE ledgers SET epsilon_spent_units = %d, audit_head_seq = %d, "
             "audit_head_hash = '\\x%s' WHERE population_id = %d"
             % (ROWS * EPSILON_UNITS, ROWS, head.hex(), dataset_id))
        loaded = time.monotonic()

        pid = dpqd.proc.pid
        rss_before = status_kb(pid, "VmRSS")
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")  # VmHWM := VmRSS (proc(5))
        full = dpqd.ctl("audit", "verify", "slid", "--full", timeout_s=240)
        verified = time.monotonic()
        peak = status_kb(pid, "VmHWM")
        self.assertTrue(full["ok"], dict(full))
        self.assertTrue(full["full"])
        self.assertEqual((full["entries"], full["rows_read"]), (ROWS, ROWS))
        self.assertEqual(full["epsilon_spent_recomputed"], full["epsilon_spent_ledger"])
        again = dpqd.ctl("audit", "verify", "slid", "--full", timeout_s=240)
        self.assertTrue(again["ok"], dict(again))
        peak_again = status_kb(pid, "VmHWM")
        print("\n%d rows written in %.1f s; full verify %.1f s; dpqd RSS %d MB before, peak %d MB "
              "(+%d MB), after a second full run peak %d MB"
              % (ROWS, loaded - started, verified - loaded, rss_before // 1024, peak // 1024,
                 (peak - rss_before) // 1024, peak_again // 1024), file=sys.stderr)
        self.assertLess(peak - rss_before, LIMIT_KB)
        self.assertLess(peak_again - rss_before, LIMIT_KB)

        for k in range(1, 6):  # five new rows (different questions: no cached answers)
            dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1,
                     "--max-contributions", k, token=alice)
        text = dpqd.ctl_text("audit", "verify", "slid")
        self.assertIn("audit chain intact: %d entries" % (ROWS + 5), text)
        self.assertIn("incremental from seq %d, read 6 rows" % ROWS, text)  # checkpoint + 5 rows
        incremental = dpqd.ctl("audit", "verify", "slid")  # nothing new: the checkpoint row alone
        self.assertTrue(incremental["ok"], dict(incremental))
        self.assertFalse(incremental["full"])
        self.assertEqual(incremental["checkpoint_seq"], ROWS + 5)
        self.assertEqual(incremental["rows_read"], 1)
        self.assertEqual(incremental["entries"], ROWS + 5)
        last = dpqd.ctl("audit", "verify", "slid", "--full", timeout_s=240)
        self.assertTrue(last["ok"], dict(last))
        self.assertEqual(last["rows_read"], ROWS + 5)

        counted = harness.metric_values(dpqd.metrics(), "dpq_audit_verify_rows_total",
                                        population="slid")
        self.assertEqual(counted, [float(ROWS + ROWS + 6 + 1 + ROWS + 5)])
        admin = dpqd.ctl("audit", "verify", "--admin-log")
        self.assertTrue(admin["ok"], dict(admin))
        self.assertEqual(harness.metric_values(dpqd.metrics(), "dpq_audit_verify_rows_total",
                                               population=""), [float(admin["rows_read"])])


if __name__ == "__main__":
    unittest.main(verbosity=2)
