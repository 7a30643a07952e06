#!/usr/bin/python3
"""DP-SGD logistic regression in numpy, its privacy accounted by dpq: does a person of the demo
table earn at least 15 an hour (slid.csv: wages), from education, age, sex and language?

    DPQ_SERVER=127.0.0.1:7777 DPQ_TOKEN=... python3 dp_sgd_logistic_regression.py \
        --csv deploy/demo-data/slid.csv [--dataset slid] [--target-epsilon 1] [--epochs 5]

DP-SGD as in Abadi et al. 2016 ("Deep Learning with Differential Privacy", Alg. 1): each step
draws a Poisson sample (every row with probability q), clips each per-example gradient to L2 norm
C, adds Gaussian noise of standard deviation sigma = z * C to their sum and divides by the expected
batch size q * n. dpq calibrates z so that --epochs epochs cost --target-epsilon (training start
with a target and a step count), and each epoch's steps are reported to dpq BEFORE they run: when
dpq refuses them (RESOURCE_EXHAUSTED, the dataset's budget is spent) the training stops, having
touched the data only in steps that were paid for. The trainer reads the rows itself (dpq prices
the steps from q, z, delta and their number only); dpq's dataset is the ledger they are charged to.
The accuracy printed is measured on the training rows themselves, for illustration: it is not
private, a real trainer would report it on public or held-out data. Sampling and noise come from
numpy's default generator, enough for a demonstration; a deployment draws them from a
cryptographically secure source.
"""
import argparse
import csv
import sys

import numpy as np

import dpq

WAGE_THRESHOLD = 15.0  # the label: wages >= 15
CLIP_NORM = 1.0        # C of Abadi et al. 2016, Alg. 1
LEARNING_RATE = 0.5
BATCH_SIZE = 256       # expected Poisson batch: q = BATCH_SIZE / n


def load(path):
    """Features scaled by their public bounds (education 0..25, age 0..120) plus sex, language
    indicators and an intercept; label wages >= WAGE_THRESHOLD. Rows missing one of them are
    left out."""
    features, labels = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if not all(row[c] for c in ("wages", "education", "age", "sex", "language")):
                continue
            features.append([1.0, float(row["education"]) / 25, float(row["age"]) / 120,
                             row["sex"] == "Male", row["language"] == "English",
                             row["language"] == "French"])
            labels.append(float(row["wages"]) >= WAGE_THRESHOLD)
    return np.array(features, dtype=float), np.array(labels, dtype=float)


def sigmoid(t):
    return 1 / (1 + np.exp(-t))


def dp_sgd_step(w, x, y, q, z, rng):
    """One step of Abadi et al. 2016, Alg. 1: Poisson sample at rate q, per-example gradients of
    the logistic loss clipped to norm C, Gaussian noise N(0, (z C)^2 I) on their sum, divided by
    the expected batch size q n."""
    batch = rng.random(len(y)) < q
    xb, yb = x[batch], y[batch]
    grads = (sigmoid(xb @ w) - yb)[:, None] * xb
    norms = np.linalg.norm(grads, axis=1, keepdims=True)
    clipped = grads / np.maximum(1.0, norms / CLIP_NORM)
    noisy = clipped.sum(axis=0) + rng.normal(0.0, z * CLIP_NORM, size=w.shape)
    return w - LEARNING_RATE * noisy / (q * len(y))


def accuracy(w, x, y):
    return float(np.mean((sigmoid(x @ w) >= 0.5) == (y == 1)))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True, help="slid.csv (deploy/demo-data)")
    parser.add_argument("--dataset", default="slid", help="the dpq dataset charged")
    parser.add_argument("--run", default="logreg")
    parser.add_argument("--target-epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--epochs", type=int, default=5, help="epochs the target is planned for")
    parser.add_argument("--max-epochs", type=int, default=50, help="train until refused, or this")
    parser.add_argument("--seed", type=int, default=None, help="tests only: not private")
    args = parser.parse_args(argv)

    x, y = load(args.csv)
    q = BATCH_SIZE / len(y)
    steps_per_epoch = int(round(1 / q))
    client = dpq.Client()  # $DPQ_SERVER, $DPQ_TOKEN
    run = client.training.start(args.dataset, args.run, q, delta=args.delta,
                                target_epsilon=args.target_epsilon,
                                steps=args.epochs * steps_per_epoch)
    print("rows %d, q %.4f, %d steps an epoch, C %g; dpq calibrated z = %.4g for epsilon %g after "
          "%d epochs (delta %g)" % (len(y), q, steps_per_epoch, CLIP_NORM, run.noise_multiplier,
                                    args.target_epsilon, args.epochs, args.delta))
    rng = np.random.default_rng(args.seed)
    w = np.zeros(x.shape[1])
    print("%5s  %6s  %8s  %8s" % ("epoch", "steps", "epsilon", "accuracy"))
    for epoch in range(1, args.max_epochs + 1):
        try:  # pay before touching the data
            report = client.training.report_steps(run, steps_per_epoch,
                                                  request_id="%s-epoch-%d" % (args.run, epoch))
        except dpq.ResourceExhausted as refusal:
            print("dpq refused epoch %d: %s" % (epoch, refusal.message))
            break
        for _ in range(steps_per_epoch):
            w = dp_sgd_step(w, x, y, q, run.noise_multiplier, rng)
        print("%5d  %6d  %8.4f  %8.3f" % (epoch, report.run.steps, report.run.epsilon,
                                          accuracy(w, x, y)))
    final = client.training.get(run)
    print("final: %d steps, epsilon %.4f at delta %g, accuracy %.3f (majority class %.3f)" % (
        final.steps, final.epsilon, final.delta, accuracy(w, x, y), max(y.mean(), 1 - y.mean())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
