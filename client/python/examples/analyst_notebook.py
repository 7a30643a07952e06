#!/usr/bin/python3
"""An analyst's session, notebook style: look at a dataset, plan the budget, ask DP questions, and
plot the answers with their confidence intervals (matplotlib, Agg backend, a PNG file).

    DPQ_SERVER=127.0.0.1:7777 DPQ_TOKEN=... python3 analyst_notebook.py [--dataset D] [--out F]

Needs a dataset with the columns of deploy/demo-data/slid.csv (wages, age, sex) and a budget of
at least 2 epsilon; spends 1.7.
"""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")  # no display: render to a file
import matplotlib.pyplot as plt  # noqa: E402  pylint: disable=wrong-import-position

import dpq  # noqa: E402  pylint: disable=wrong-import-position

TARGET_ERROR = 20  # +- rows at 95 %, for the overall count
WAGE_BINS = [0, 10, 15, 20, 25, 30, 40, 100]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="slid")
    parser.add_argument("--out", default="analyst_notebook.png")
    args = parser.parse_args(argv)
    client = dpq.Client()  # $DPQ_SERVER, $DPQ_TOKEN

    # 1. What is there, and what may I still spend?
    schema = client.dataset(args.dataset)
    print("columns:", ", ".join("%s (%s)" % (c.name, c.type) for c in schema.columns))
    budget = client.budget(args.dataset)
    print("epsilon remaining: %.3g of %.3g" % (budget.epsilon_remaining, budget.epsilon_total))

    # 2. Plan before paying: the epsilon that buys +-20 rows on the count (free).
    plan = client.plan(args.dataset, "count", target_error=TARGET_ERROR)
    print("a +-%d count costs epsilon %.3g" % (TARGET_ERROR, plan.epsilon))

    # 3. Ask: how many respondents, their mean wage by sex, and the wage distribution.
    count = client.query(args.dataset, "count", min(plan.epsilon, 0.5))
    print("respondents: %.0f (95 %%: %.0f to %.0f)" % (count.value, count.interval.lower,
                                                      count.interval.upper))
    by_sex = client.query(args.dataset, "mean", 0.6, column="wages", group_by=["sex"],
                          keys=["Female", "Male"]).to_pandas()
    histogram = client.query(args.dataset, "histogram", 0.6, column="wages",
                             bins=WAGE_BINS).to_pandas()
    print(by_sex[["sex", "value", "lower", "upper"]].round(2).to_string(index=False))
    print(histogram[["label", "value", "lower", "upper"]].round(0).to_string(index=False))

    # 4. Plot: point estimates with their intervals as error bars.
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    plot_with_intervals(left, by_sex["sex"], by_sex, "mean hourly wage by sex (DP, 95 % CI)")
    plot_with_intervals(right, histogram["label"], histogram, "respondents by hourly wage band",
                        rotation=30)
    figure.tight_layout()
    figure.savefig(args.out, dpi=80)
    spent = client.budget(args.dataset)
    print("wrote %s; epsilon spent now %.3g" % (args.out, spent.epsilon_spent))
    client.close()


def plot_with_intervals(axes, labels, frame, title, rotation=0):
    """Bars at the released values; error bars span each released interval."""
    positions = range(len(frame))
    errors = [frame["value"] - frame["lower"], frame["upper"] - frame["value"]]
    axes.bar(positions, frame["value"], yerr=errors, capsize=4, color="#4c72b0")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(list(labels), rotation=rotation, ha="right" if rotation else "center")
    axes.set_title(title)


if __name__ == "__main__":
    main(sys.argv[1:])
