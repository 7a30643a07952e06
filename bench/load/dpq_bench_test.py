#!/usr/bin/python3
"""End-to-end: dpq-bench against a real dpqd (tests/e2e/harness.py).

- A 2-client, 40-request run prints one JSON document whose counts add up, whose percentiles are
  ordered, and whose every request was a real debit (the audit trail grew by exactly as many rows,
  none answered by the result cache).
- Refusals are counted by gRPC code: a wrong token gives UNAUTHENTICATED for every request and
  exit status 1; an exhausted budget gives RESOURCE_EXHAUSTED.
- A non-loopback --server is refused before anything is sent (exit 2, a message naming --server).
"""

import json
import re
import os
import subprocess
import sys
import unittest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "e2e"))
import harness  # noqa: E402


def bench_path():
    path = os.environ.get("DPQ_BENCH") or os.path.join(REPO_ROOT, "build", "bin", "dpq-bench")
    if not os.path.exists(path):
        raise unittest.SkipTest("dpq-bench not found (set DPQ_BENCH)")
    return path


class DpqBenchTest(harness.DpqdTestCase):
    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.create_slid(cls.dpqd)
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1000)
        cls.token = cls.create_analyst(cls.dpqd, "bencher")
        cls.dpqd.ctl("grant", "bencher", "slid")

    def bench(self, *args, token=None, dataset="slid"):
        argv = [bench_path(), "--server", self.dpqd.address, "--token", token or self.token,
                "--dataset", dataset] + [str(a) for a in args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)

    def audit_entries(self):
        return self.dpqd.ctl("audit", "verify", "slid")["entries"]

    def test_json_document_counts_every_request_as_a_debit(self):
        before = self.audit_entries()
        proc = self.bench("--clients", 2, "--count", 40, "--duration", 60, "--json",
                          "--mix", "count=3,sum=1,batch=1", "--column", "wages", "--batch-size", 3)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        doc = json.loads(proc.stdout)
        for key in ("throughput", "p50", "p90", "p99", "max", "errors"):
            self.assertIn(key, doc)
        self.assertEqual(doc["requests"], 40)
        self.assertEqual(doc["ok"], 40, doc)
        self.assertEqual(doc["errors"], {})
        self.assertEqual(doc["cached"], 0)
        self.assertGreater(doc["throughput"], 0)
        self.assertLessEqual(doc["p50"], doc["p90"])
        self.assertLessEqual(doc["p90"], doc["p99"])
        self.assertLessEqual(doc["p99"], doc["max"])
        # A batch is one allocation with one audit row, like a single query.
        self.assertEqual(self.audit_entries() - before, 40)
        self.assertTrue(self.dpqd.ctl("audit", "verify", "slid")["ok"])

    def test_table_output_is_aligned_and_ends_in_a_newline(self):
        proc = self.bench("--count", 3, "--epsilon", 0.002)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(proc.stdout.endswith("\n"))
        lines = proc.stdout.splitlines()
        self.assertIn("throughput", proc.stdout)
        starts = {re.match(r"^\S+(?: \S+)*\s{2,}", l).end() for l in lines}
        self.assertEqual(len(starts), 1, proc.stdout)

    def test_errors_are_counted_by_code(self):
        proc = self.bench("--count", 5, "--json", token="not-a-token")
        self.assertEqual(proc.returncode, 1, proc.stderr)
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["errors"], {"UNAUTHENTICATED": 5})
        self.assertEqual(doc["ok"], 0)
        # 5 queries of epsilon 0.3 against a budget of 1: three fit, two are refused.
        self.create_slid(self.dpqd, name="tiny")
        self.dpqd.ctl("budget", "set", "tiny", "--epsilon", 1)
        self.dpqd.ctl("grant", "bencher", "tiny")
        proc = self.bench("--count", 5, "--json", "--epsilon", 0.3, dataset="tiny")
        doc = json.loads(proc.stdout)
        self.assertEqual(doc["ok"], 3, doc)
        self.assertEqual(doc["errors"], {"RESOURCE_EXHAUSTED": 2}, doc)

    def test_refuses_a_remote_server_before_sending(self):
        proc = subprocess.run([bench_path(), "--server", "192.0.2.1:7777", "--dataset", "slid",
                               "--count", "1"], capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--server", proc.stderr)
        self.assertIn("not a loopback address", proc.stderr)
        self.assertEqual(proc.stdout, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
