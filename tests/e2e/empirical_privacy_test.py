#!/usr/bin/python3
"""End-to-end empirical privacy check of the contribution-bounding path.

Many releases of the same query through dpqd on a dataset D and on a neighbour D' (D plus one
privacy unit), then a statistical LOWER bound on the privacy loss from them, which must not exceed
the epsilon the ledger charged. The audit is the threshold test of Jagielski, Ullman and Oprea 2020
("Auditing Differentially Private Machine Learning: How Private is Private SGD?", Alg. 2) and Nasr
et al. 2021: for an event E = {release > t} (or < t) and a pair (D1, D2) in either order, pure
epsilon-DP implies P(M(D1) in E) <= e^eps P(M(D2) in E). With one-sided Clopper-Pearson bounds at
level alpha/2 each, eps_lb = ln(p1_lower / p2_upper) is <= the true loss with probability
>= 1 - alpha whatever the mechanism does, provided E is chosen independently of the samples that
count. E (threshold, direction, order) is chosen on a first, separate half of the releases; the
bound is computed once, on the second half. So a correct server fails this test with probability
at most alpha = 1e-6: fixed seeds are not available through the server, the false-failure
probability is alpha by construction.

Scenarios (units have several rows; K = 1; sum over the declared [0, 10]; Laplace at EPSILON):
  a) D' adds one unit whose rows are all at the upper bound 10: the shift is the sensitivity and
     the true loss is the charged epsilon (tail ratio e^eps); the bound must stay below it.
  b) the NULL switch: every unit's rows are loaded as [0, 10]; D' adds a unit whose value is NULL.
     On a correct server both keep the rank-at-load row (0): equal distributions, true loss 0.
     Where the NULL switches every other unit to a random row, D' releases ~10 * Bin(40, 1/2)
     = 200 +- 32 against 0 on D.

Sizing (releases come in batches of 1000 through `dpqctl query-batch`: one RPC, 1000 scans):
N_SELECT = 1000 releases per dataset choose the event, N_EVAL = 2000 per dataset bound it.
Simulated with this file's own selection and bound (continuous Laplace, b = 10 / epsilon,
300 repetitions each; eps_lb median [min, max]):
  * correct server, scenario a (true loss 1.0): 0.67 [0.43, 0.80], never above 1.0; the margin
    to 1.0 is the price of alpha = 1e-6 with 2000 samples;
  * correct server, scenario b (true loss 0): -0.02 [-0.04, -0.01];
  * a sensitivity bug that halves the noise (true loss 2.0): 1.51 [1.35, 1.68], above 1.0 in
    every run: detected;
  * noise 2/3 of the calibrated one (true loss 1.5): 1.10 [0.86, 1.27], above 1.0 in 97 % of runs;
  * scenario b on a server with the old NULL switch (D' ~ 10 Bin(40, 1/2) + noise against
    0 + noise on D): 4.74 [3.72, 4.92], above 1.0 in every run (nearly all samples separated: the
    bound is limited by N and alpha only).
The whole file takes about 30 s (12 batch calls of 1000 releases; the rest is arithmetic).
"""

import fractions
import json
import math
import os
import random
import statistics
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

EPSILON = 1.0
ALPHA = 1e-6          # false-failure probability of each scenario's assertion
N_SELECT = 1000       # releases per dataset that choose the event
N_EVAL = 2000         # releases per dataset that bound its probabilities
BATCH = 1000          # queries per query-batch call (the server's maximum)
THRESHOLD_QUANTILES = [i / 100 for i in range(1, 100)]
TIME_LIMIT_S = 240.0

# ---------------------------------------------------------------------------------------------
# Clopper-Pearson bounds from the regularized incomplete beta function (no scipy)
# ---------------------------------------------------------------------------------------------


def _betacf(a, b, x):
    """Continued fraction of I_x(a, b) (modified Lentz; Press et al., Numerical Recipes, 3rd ed.,
    section 6.4, eq. 6.4.5). Converges quickly for x < (a + 1) / (a + b + 2)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise ArithmeticError("incomplete beta: no convergence for a=%r b=%r x=%r" % (a, b, x))


def betainc(a, b, x):
    """(I_x(a, b), 1 - I_x(a, b)), the smaller of the two computed directly (no cancellation), for
    a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0, 1.0
    if x >= 1.0:
        return 1.0, 0.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        lower = math.exp(log_front) * _betacf(a, b, x) / a
        return lower, 1.0 - lower
    upper = math.exp(log_front) * _betacf(b, a, 1.0 - x) / b
    return 1.0 - upper, upper


def _bisect(f, iterations=200):
    """The root in [0, 1] of an increasing function f, by bisection (to a double's resolution)."""
    lo, hi = 0.0, 1.0
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return lo, hi


def cp_lower(k, n, alpha):
    """One-sided Clopper-Pearson lower bound: the p with P(Bin(n, p) >= k) = alpha, i.e.
    I_p(k, n - k + 1) = alpha (0 when k = 0). P(p_true < bound) <= alpha."""
    if k <= 0:
        return 0.0
    lo, _ = _bisect(lambda p: betainc(k, n - k + 1, p)[0] - alpha)
    return lo  # rounded down: the bound stays conservative


def cp_upper(k, n, alpha):
    """One-sided Clopper-Pearson upper bound: the p with P(Bin(n, p) <= k) = alpha, i.e.
    1 - I_p(k + 1, n - k) = alpha (1 when k = n). P(p_true > bound) <= alpha."""
    if k >= n:
        return 1.0
    _, hi = _bisect(lambda p: alpha - betainc(k + 1, n - k, p)[1])
    return hi  # rounded up


def epsilon_lower_bound(k1, k2, n, alpha):
    """ln(p1_lower / p2_upper) at level alpha/2 each; -inf when p1_lower is 0."""
    p1 = cp_lower(k1, n, alpha / 2)
    p2 = cp_upper(k2, n, alpha / 2)
    return math.log(p1 / p2) if p1 > 0 else -math.inf


def _events(samples):
    """Candidate events: (direction, threshold) at quantiles of the pooled samples."""
    pooled = sorted(samples)
    out = []
    for q in THRESHOLD_QUANTILES:
        t = pooled[min(len(pooled) - 1, int(q * len(pooled)))]
        out += [(">", t), ("<", t)]
    return out


def _count(samples, event):
    direction, t = event
    return sum(1 for s in samples if (s > t if direction == ">" else s < t))


def audit(d_samples, dp_samples, alpha=ALPHA):
    """The threshold audit: the event and order chosen on the first N_SELECT samples of each side,
    the bound computed on the rest. Returns (eps_lb, description)."""
    sel = {"D": d_samples[:N_SELECT], "D'": dp_samples[:N_SELECT]}
    ev = {"D": d_samples[N_SELECT:], "D'": dp_samples[N_SELECT:]}
    n_sel, n_ev = N_SELECT, len(ev["D"])
    assert len(ev["D'"]) == n_ev
    best, best_choice = -math.inf, None
    for event in _events(sel["D"] + sel["D'"]):
        counts = {side: _count(sel[side], event) for side in sel}
        for num, den in (("D'", "D"), ("D", "D'")):
            if counts[num] == 0:
                continue  # a bound of -inf
            bound = epsilon_lower_bound(counts[num], counts[den], n_sel, alpha)
            if bound > best:
                best, best_choice = bound, (event, num, den)
    if best_choice is None:
        return -math.inf, "no event with any sample on the selection half"
    event, num, den = best_choice
    k1, k2 = _count(ev[num], event), _count(ev[den], event)
    eps_lb = epsilon_lower_bound(k1, k2, n_ev, alpha)
    return eps_lb, ("event release %s %.6g, P[%s] >= %.6g (k=%d/%d) vs P[%s] <= %.6g (k=%d/%d); "
                    "selection-half bound %.3f" % (event[0], event[1], num, cp_lower(k1, n_ev, alpha / 2),
                                                   k1, n_ev, den, cp_upper(k2, n_ev, alpha / 2), k2,
                                                   n_ev, best))


class ClopperPearsonTest(unittest.TestCase):
    """The helpers against known values."""

    def test_incomplete_beta_closed_forms(self):
        for x in (1e-9, 0.01, 0.3, 0.5, 0.77, 0.999):
            self.assertAlmostEqual(betainc(1, 1, x)[0], x, delta=1e-13)
            self.assertAlmostEqual(betainc(3, 1, x)[0], x ** 3, delta=1e-13)
            self.assertAlmostEqual(betainc(1, 4, x)[0], 1 - (1 - x) ** 4, delta=1e-13)
            lower, upper = betainc(2.5, 7, x)
            self.assertAlmostEqual(lower + upper, 1.0, delta=1e-14)
        self.assertAlmostEqual(betainc(20, 20, 0.5)[0], 0.5, delta=1e-13)
        self.assertAlmostEqual(betainc(1000, 1000, 0.5)[0], 0.5, delta=1e-12)

    def test_incomplete_beta_equals_the_binomial_tail(self):
        # P(Bin(n, p) >= k) = I_p(k, n - k + 1), summed exactly here (integers: p = num / den).
        for n, k, num, den in ((10, 3, 2, 10), (50, 25, 1, 2), (200, 7, 1, 100), (2000, 1500, 74, 100),
                               (2000, 30, 1, 200)):
            tail = float(fractions.Fraction(
                sum(math.comb(n, j) * num ** j * (den - num) ** (n - j) for j in range(k, n + 1)),
                den ** n))
            self.assertAlmostEqual(betainc(k, n - k + 1, num / den)[0], tail,
                                   delta=1e-12 + 1e-9 * tail)

    def test_clopper_pearson_known_values(self):
        # 5 of 10 at two-sided 95 %: [0.187086, 0.812914] (Clopper & Pearson 1934 tables; R
        # binom.test(5, 10)$conf.int).
        self.assertAlmostEqual(cp_lower(5, 10, 0.025), 0.187086, delta=1e-6)
        self.assertAlmostEqual(cp_upper(5, 10, 0.025), 0.812914, delta=1e-6)
        # 0 of n: upper = 1 - alpha^(1/n); n of n: lower = alpha^(1/n).
        for n, alpha in ((10, 0.025), (2000, 5e-7)):
            self.assertAlmostEqual(cp_upper(0, n, alpha), 1 - alpha ** (1 / n), delta=1e-12)
            self.assertAlmostEqual(cp_lower(n, n, alpha), alpha ** (1 / n), delta=1e-12)
        self.assertEqual(cp_lower(0, 100, 0.01), 0.0)
        self.assertEqual(cp_upper(100, 100, 0.01), 1.0)
        # 1 of 10 at 95 % two-sided: [0.002529, 0.445016].
        self.assertAlmostEqual(cp_lower(1, 10, 0.025), 0.002529, delta=1e-6)
        self.assertAlmostEqual(cp_upper(1, 10, 0.025), 0.445016, delta=1e-6)

    def test_audit_bound_is_valid_and_has_power_on_simulated_laplace(self):
        # Seeded simulation (the only seeded part of this file): the bound stays below the true
        # loss of an epsilon-DP Laplace pair and exceeds the charge when the noise is halved.
        rng = random.Random(7)

        def laplace(b):
            return b * math.log(rng.random() / rng.random())  # difference of two exponentials
        n = N_SELECT + N_EVAL
        b = 10 / EPSILON
        d = [100 + laplace(b) for _ in range(n)]
        dp = [110 + laplace(b) for _ in range(n)]
        eps_lb, _ = audit(d, dp)
        self.assertLessEqual(eps_lb, EPSILON)
        d = [100 + laplace(b / 2) for _ in range(n)]
        dp = [110 + laplace(b / 2) for _ in range(n)]
        eps_lb, why = audit(d, dp)
        self.assertGreater(eps_lb, EPSILON, why)


# ---------------------------------------------------------------------------------------------
# Through dpqd
# ---------------------------------------------------------------------------------------------

class EmpiricalPrivacyTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        cls.dir = cls.make_class_temp_dir()
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        query = {"aggregate": "sum", "column": "x", "max_contributions": 1, "epsilon": EPSILON}
        cls.batch_file = os.path.join(cls.dir, "batch.json")
        with open(cls.batch_file, "w") as f:
            json.dump([query] * BATCH, f)

    def create(self, name, rows):
        path = os.path.join(self.dir, name + ".csv")
        with open(path, "w") as f:
            f.write("pid,x\n" + "".join(r + "\n" for r in rows))
        self.dpqd.ctl("dataset", "create", name, "--csv", path, "--privacy-unit", "pid",
                      "--type", "pid=integer", "--type", "x=double", "--bounds", "x=0:10")
        self.dpqd.ctl("budget", "set", name, "--epsilon", 9e6)
        self.dpqd.ctl("grant", "alice", name)

    def releases(self, name, count, deadline):
        """`count` releases of the sum (K = 1) on `name`, in batches of BATCH, with their charge
        checked: each release is charged EPSILON (basic composition, delta 0)."""
        values = []
        for i in range(count // BATCH):
            if time.monotonic() > deadline:
                raise AssertionError("time limit reached after %d releases on %s" % (len(values), name))
            before = self.dpqd.ctl("budget", "show", name)["epsilon_spent"]
            doc = self.dpqd.ctl("query-batch", name, "--file", self.batch_file,
                                "--request-id", "%s-%d" % (name, i), token=self.alice, timeout_s=300)
            self.assertEqual(len(doc["answers"]), BATCH)
            for a in doc["answers"]:
                self.assertEqual(a["mechanism"], "laplace")
                self.assertEqual(a["epsilon"], EPSILON)
                self.assertFalse(a["cached"])
                values.append(a["value"])
            after = self.dpqd.ctl("budget", "show", name)["epsilon_spent"]
            self.assertAlmostEqual(after - before, BATCH * EPSILON, delta=1e-6)
        return values

    def run_audit(self, d_name, dp_name, scenario):
        deadline = time.monotonic() + TIME_LIMIT_S
        n = N_SELECT + N_EVAL
        d = self.releases(d_name, n, deadline)
        dp = self.releases(dp_name, n, deadline)
        eps_lb, why = audit(d, dp)
        sys.stderr.write("[empirical %s] eps_lb = %.4f (charged %g); mean release D %.2f, D' %.2f; %s\n"
                         % (scenario, eps_lb, EPSILON, statistics.fmean(d), statistics.fmean(dp), why))
        self.assertLessEqual(eps_lb, EPSILON,
                             "scenario %s: the releases show a privacy loss of at least %.3f with "
                             "confidence 1 - %g, above the charged epsilon %g (%s)" %
                             (scenario, eps_lb, ALPHA, EPSILON, why))
        return d, dp

    def test_a_unit_at_the_upper_bound(self):
        rng = random.Random(3)
        rows = ["%d,%s" % (pid, repr(round(rng.uniform(0, 10), 2)))
                for pid in range(1, 31) for _ in range(3)]
        self.create("ea_d", rows)
        self.create("ea_dp", rows + ["%d,10" % 1000] * 3)
        d, dp = self.run_audit("ea_d", "ea_dp", "a")
        # The pair is wired as intended: D' releases are shifted by the sensitivity 10 in
        # expectation, whichever row each unit keeps. One release's variance is at most the
        # Laplace noise's 2 b^2 = 200 (b = 10, a hair more on the grid) plus, if the kept rows were
        # random, 30 units x 25 (the largest variance of a value in [0, 10]) = 950: sd 30.8. The
        # difference of two means of 3000 has sd <= 30.8 * sqrt(2 / 3000) = 0.80; 6 sd = 4.8 (a
        # false failure has probability ~2e-9 by the normal approximation).
        self.assertAlmostEqual(statistics.fmean(dp) - statistics.fmean(d), 10.0, delta=4.8)

    def test_b_null_unit_does_not_change_the_distribution(self):
        rows = []
        for pid in range(1, 41):
            rows += ["%d,0" % pid, "%d,10" % pid]
        self.create("eb_d", rows)
        self.create("eb_dp", rows + ["41,"])
        self.run_audit("eb_d", "eb_dp", "b")


if __name__ == "__main__":
    unittest.main()
