#!/usr/bin/python3
"""Runs every example of client/python/examples against a real dpqd, as a user would (a separate
/usr/bin/python3 with the package on PYTHONPATH), and checks what it leaves behind."""
import os
import subprocess
import time
import unittest

import _paths
import harness

EXAMPLE_TIMEOUT_S = 120


class ExamplesTest(harness.DpqdTestCase):

    def run_example(self, name, env, *args):
        path = os.path.join(_paths.EXAMPLES_DIR, name)
        proc = subprocess.run(["/usr/bin/python3", path] + [str(a) for a in args], env=env,
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

    def test_dp_sgd_trains_until_dpq_refuses_within_the_budget(self):
        dpqd = self.new_dpqd()
        self.create_slid(dpqd)
        budget, delta = 1.0, 1e-5
        dpqd.ctl("budget", "set", "slid", "--epsilon", budget, "--delta", delta,
                 "--accountant", "rdp")
        token = self.create_analyst(dpqd, "trainer")
        dpqd.ctl("grant", "trainer", "slid")
        env = dict(os.environ, DPQ_SERVER=dpqd.address, DPQ_TOKEN=token,
                   PYTHONPATH=_paths.PACKAGE_DIR)
        started = time.monotonic()
        stdout = self.run_example("dp_sgd_logistic_regression.py", env,
                                  "--csv", harness.data_file("slid.csv"), "--target-epsilon",
                                  budget, "--delta", delta, "--epochs", 4, "--seed", 1)
        self.assertLess(time.monotonic() - started, 20)
        # Planned for 4 epochs at the whole budget: the 5th is refused, nothing charged for it.
        self.assertIn("dpq refused epoch 5", stdout)
        shown = dpqd.ctl("training", "show", "--run", "logreg")
        self.assertEqual(shown["reports"], 4)
        self.assertLessEqual(shown["epsilon"], budget + 1e-9)
        spent, _, entries = self.snapshot(dpqd, "slid")
        self.assertEqual(entries, 4)
        # The run's delta is the ledger's: the rdp ledger's spend is the run's epsilon.
        self.assert_close(spent, shown["epsilon"], tol=1e-9)
        self.assertIn("epsilon %.4f at delta" % shown["epsilon"], stdout)
        epochs = [line.split() for line in stdout.splitlines()
                  if line.strip() and line.split()[0].isdigit()]
        self.assertEqual([int(e[0]) for e in epochs], [1, 2, 3, 4])
        # Better than always answering the majority class: the model learned something.
        final = stdout.rsplit("final:", 1)[1]
        trained = float(final.split("accuracy ")[1].split()[0])
        majority = float(final.split("majority class ")[1].rstrip(")\n "))
        self.assertGreater(trained, majority + 0.02, stdout)

    def test_ldp_survey_intervals_cover_the_true_counts(self):
        dpqd = self.new_dpqd()
        env = dict(os.environ, DPQ_SERVER=dpqd.address, DPQ_TOKEN=harness.ADMIN_TOKEN,
                   DPQ_RESPONDENT_TOKEN=self.create_analyst(dpqd, "respondents"),
                   PYTHONPATH=_paths.PACKAGE_DIR)
        respondents = 1000
        stdout = self.run_example("ldp_survey.py", env, "--csv", harness.data_file("slid.csv"),
                                  "--respondents", respondents, "--confidence", 0.99,
                                  "--seed", 3)
        shown = dpqd.ctl("collection", "show", "age_survey")
        self.assertEqual(shown["reports"], respondents)
        self.assertIn("%d reports" % respondents, stdout)
        rows = [line.split() for line in stdout.splitlines() if line.endswith(("yes", "NO"))]
        self.assertEqual(len(rows), 6)
        self.assertEqual(sum(int(r[1]) for r in rows), respondents)
        # Each 99 % interval misses its true count with probability about 0.01, so the number of
        # misses X among the 6 values has E[X] = 0.06 and, by Markov's inequality (no
        # independence needed), P(X >= 2) <= 0.03; with the respondents' coins seeded the run is
        # reproducible, and a broken randomizer or estimator misses far more than one value.
        misses = sum(r[-1] == "NO" for r in rows)
        self.assertLessEqual(misses, 1, stdout)
        self.assertIn("covered: %d of 6" % (6 - misses), stdout)


if __name__ == "__main__":
    unittest.main()
