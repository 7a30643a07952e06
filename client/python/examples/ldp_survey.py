#!/usr/bin/python3
"""A local-DP survey: an admin declares a collection, simulated respondents each randomize their
age group on their own side (dpq.ldp, through client.collections.submit) and send only the
report; the server's frequency estimates, with intervals, are compared with the true counts.

    DPQ_SERVER=127.0.0.1:7777 DPQ_TOKEN=<admin token> python3 ldp_survey.py \
        --csv deploy/demo-data/slid.csv [--respondents 1000] [--mechanism oue] [--epsilon 2]

The respondents' true values are the age groups of the first --respondents rows of slid.csv; the
true counts are printed only because this is a simulation (a real collector never sees them).
Each report is epsilon-LDP (Wang, Blocki, Li, Jha 2017); the estimates are post-processing.
Respondents submit with $DPQ_RESPONDENT_TOKEN when set (any valid token may submit), else with the
admin's.
"""
import argparse
import concurrent.futures
import csv
import os
import random
import sys

import dpq

AGE_GROUPS = ("16-24", "25-34", "35-44", "45-54", "55-64", "65+")


def age_group(age):
    for group, upper in zip(AGE_GROUPS, (24, 34, 44, 54, 64)):
        if age <= upper:
            return group
    return AGE_GROUPS[-1]


def true_values(path, n):
    values = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["age"]:
                values.append(age_group(int(float(row["age"]))))
            if len(values) == n:
                break
    return values


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True, help="slid.csv (deploy/demo-data)")
    parser.add_argument("--collection", default="age_survey")
    parser.add_argument("--respondents", type=int, default=1000)
    parser.add_argument("--mechanism", default="oue", choices=("krr", "oue", "olh"))
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=None,
                        help="tests only: seeds each respondent's coins, which is not private")
    args = parser.parse_args(argv)

    admin = dpq.Client()  # $DPQ_SERVER, $DPQ_TOKEN
    created = admin.collections.create(args.collection, AGE_GROUPS, args.epsilon, args.mechanism)
    print("collection %s: %s, epsilon %g per report, %d values" % (
        created.name, created.mechanism, created.epsilon, len(created.domain)))
    respondents = dpq.Client(token=os.environ.get("DPQ_RESPONDENT_TOKEN"))
    values = true_values(args.csv, args.respondents)

    def respond(i):
        rng = None if args.seed is None else random.Random(args.seed * 1000003 + i)
        respondents.collections.submit(args.collection, "respondent-%d" % i, values[i], rng=rng)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(respond, range(len(values))))

    est = admin.collections.estimate(args.collection, confidence=args.confidence)
    print("%d reports; estimates with %g%% intervals:" % (est.reports, 100 * est.confidence))
    print("%-6s  %5s  %8s  %-16s  %s" % ("value", "true", "estimate", "interval", "covered"))
    covered = 0
    for e in est.estimates:
        truth = values.count(e.value)
        inside = e.lower <= truth <= e.upper
        covered += inside
        print("%-6s  %5d  %8.1f  [%6.1f, %6.1f]  %s" % (e.value, truth, e.estimate, e.lower,
                                                         e.upper, "yes" if inside else "NO"))
    print("covered: %d of %d" % (covered, len(est.estimates)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
