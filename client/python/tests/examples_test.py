#!/usr/bin/python3
"""Runs every example of client/python/examples against a real dpqd, as a user would (a separate
/usr/bin/python3 with the package on PYTHONPATH), and checks what it leaves behind."""
import os
import subprocess
import unittest

import _paths
import harness

EXAMPLE_TIMEOUT_S = 120


class ExamplesTest(harness.DpqdTestCase):

    def run_example(self, name, env, *args):
        path = os.path.join(_paths.EXAMPLES_DIR, name)
        proc = subprocess.run(["/usr/bin/python3", path] + list(args), env=env,
                              capture_output=True, timeout=EXAMPLE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        stdout = proc.stdout.decode(errors="replace")
        self.assertEqual(proc.returncode, 0, "%s failed:\n%s\n%s" % (
            name, stdout, proc.stderr.decode(errors="replace")))
        return stdout

    def test_analyst_notebook_plots_answers_with_intervals(self):
        dpqd = self.new_dpqd()
        self.create_slid(dpqd)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 3, "--delta", 1e-6)
        token = self.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "slid")
        out = os.path.join(self.make_temp_dir(), "notebook.png")
        env = dict(os.environ, DPQ_SERVER=dpqd.address, DPQ_TOKEN=token,
                   PYTHONPATH=_paths.PACKAGE_DIR, MPLCONFIGDIR=self.make_temp_dir())
        stdout = self.run_example("analyst_notebook.py", env, "--out", out)
        self.assertIn("respondents:", stdout)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        # Not a blank canvas: matplotlib reads it back with more than one colour.
        import matplotlib.image  # pylint: disable=import-outside-toplevel
        pixels = matplotlib.image.imread(out)
        self.assertEqual(pixels.shape[:2], (320, 800))  # 10 x 4 inches at 80 dpi
        self.assertGreater(pixels.std(), 0.05)
        # It spent what it says: the count (at most 0.5) and two queries of 0.6.
        spent = self.snapshot(dpqd, "slid")[0]
        self.assertGreater(spent, 1.2)
        self.assertLessEqual(spent, 1.7 + 1e-9)
        self.assertIn("epsilon spent now %.3g" % spent, stdout)


if __name__ == "__main__":
    unittest.main()
