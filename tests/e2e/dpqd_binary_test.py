#!/usr/bin/python3
"""End-to-end: the dpqd executable on its own as a CLI that reads well.

* `dpqd --help` lists dpqd's own flags with their defaults and exits 0 (it used to print
  "No flags matched"; only --helpfull worked).
* A copy of dpqd outside the build tree, started from an unrelated working directory, finds its
  migrations (they are compiled into the binary) and serves queries.
* Plaintext on an address other machines can reach is warned about loudly at start-up.
"""

import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


class DpqdBinaryTest(harness.DpqdTestCase):

    def test_help_lists_dpqds_own_flags_with_defaults(self):
        proc = subprocess.run([harness.dpqd_path(), "--help"], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout
        self.assertNotIn("No flags matched", out + proc.stderr)
        for flag, default in (("--listen", "127.0.0.1:7777"), ("--metrics-listen", "127.0.0.1:9464"),
                              ("--data-dir", "./dpq-data"), ("--db-pool-size", "8"),
                              ("--migrations-dir", "(empty)"), ("--max-message-mb", "16")):
            self.assertIn("  " + flag + "\n", out)
            block = out.split("  " + flag + "\n", 1)[1].split("\n  --", 1)[0]
            self.assertIn("default: " + default, block, "%s: %r" % (flag, block))
        self.assertNotIn("--grpc", out)  # the libraries' flags are for --helpfull
        self.assertTrue(out.endswith("\n"))

    def test_copied_binary_runs_from_any_directory_with_its_built_in_migrations(self):
        root = self.make_temp_dir("dpq-binary-")
        elsewhere = os.path.join(root, "elsewhere")
        os.makedirs(elsewhere)
        copy = os.path.join(root, "dpqd")
        shutil.copy2(harness.dpqd_path(), copy)
        dpqd = self.new_dpqd(start=False)
        dpqd.binary, dpqd.cwd = copy, elsewhere
        dpqd.start()
        n = len([f for f in os.listdir(os.path.join(harness.REPO_ROOT, "migrations"))
                 if f.endswith(".sql")])
        self.assertIn("schema version %d (%d migration(s) applied now)" % (n, n), dpqd.log_text())
        self.create_slid(dpqd)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1)
        result = dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1)
        self.assertEqual(len(result["rows"]), 1)
        self.assertEqual(os.listdir(elsewhere), [])  # nothing written to the working directory


    def test_plaintext_on_a_non_loopback_address_is_warned_about_loudly(self):
        local = self.new_dpqd()
        self.assertNotIn("WITHOUT TLS", local.log_text())
        exposed = self.new_dpqd(start=False)
        exposed.listen_host = "0.0.0.0"
        exposed.start()
        self.assertIn("WARNING: listening on 0.0.0.0:%d, reachable from other machines, WITHOUT TLS"
                      % exposed.port, exposed.log_text())


if __name__ == "__main__":
    unittest.main()
