#!/usr/bin/python3
"""The neighbour-differential suites' comparator (neighbour_test.py, neighbour_join_test.py): what
an analyst observes of each request as a flat view (everything but the noisy values), the
differences between two views, the steps of a grid and the runner that plays a grid on several
datasets at once."""

import concurrent.futures
import json
import math
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

_STUBS_DIR = os.environ.get("DPQ_PYTHON_STUBS") or os.path.join(harness.REPO_ROOT, "build", "python")
sys.path.insert(0, _STUBS_DIR)
sys.path.insert(0, os.path.join(harness.REPO_ROOT, "client", "python"))
try:
    from dpq_client import DpqClient, DpqError  # noqa: E402
    _GRPC_IMPORT_ERROR = None
except ImportError as e:  # reported by the tests that need it
    DpqClient = DpqError = None
    _GRPC_IMPORT_ERROR = e

GRID_WORKERS = 3


GRID_TIME_LIMIT_S = 420.0


FLAGS = {"aggregate": "--aggregate", "column": "--column", "lower": "--lower", "upper": "--upper",
         "mechanism": "--mechanism", "delta": "--delta", "max_contributions": "--max-contributions",
         "where": "--where", "confidence": "--confidence", "quantiles": "--quantiles",
         "bins": "--bins", "group_by": "--group-by", "keys": "--keys",
         "max_partitions": "--max-partitions", "epsilon": "--epsilon", "per_unit": "--per-unit"}


def selects_keys(q):
    """True when the released keys come from DP partition selection (no declared domain)."""
    return (("grp" in q.get("group_by", []) and not q.get("keys"))
            or (q["aggregate"] == "histogram" and q.get("column") == "grp"))


def _number(v):
    return repr(float(v)) if isinstance(v, float) else str(v)


def query_flags(q):
    args = []
    for key, value in q.items():
        if value is True:  # a switch (--per-unit)
            args.append(FLAGS[key])
            continue
        if isinstance(value, list):
            value = ",".join(_number(v) for v in value)
        args += [FLAGS[key], _number(value)]
    return args


ABSENT = "<absent>"


class HalfWidth:
    """The half-width of a released interval [v - h, v + h]. Data-independent for count, sum and
    histogram bins (h comes from the noise distribution alone), but read back as (upper - lower)/2
    of two rounded doubles: each end is off by at most half an ulp of the larger end, so two equal
    h read back within ulp(max |end|) of each other; 2 ulps per side is the tolerance."""

    def __init__(self, interval):
        lo, hi = interval.get("lower"), interval.get("upper")
        self.raw = (lo, hi)
        self.ok = isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and \
            math.isfinite(lo) and math.isfinite(hi)
        self.h = (hi - lo) / 2 if self.ok else None
        self.tol = 2 * math.ulp(max(abs(lo), abs(hi))) if self.ok else 0.0

    def differs(self, other):
        if not isinstance(other, HalfWidth):
            return True
        if not (self.ok and other.ok):
            return self.raw != other.raw
        return abs(self.h - other.h) > self.tol + other.tol

    def __repr__(self):
        return "half-width %r" % (self.h,) if self.ok else "interval %r" % (self.raw,)


class SelectedRows:
    """Rows released by DP partition selection. Which keys are released, and so how many rows, is
    DP-protected by design (a key is released with a probability set by its number of units;
    Desfontaines et al. 2022), so it may differ between neighbours and is not compared. What is
    public is compared whenever both sides released rows: every row's noise scale, rank error and
    interval confidence, the half-width (count, sum, histogram), and the labels each released key
    carries (bins, quantile levels; for a text histogram the labels are keys, hence not)."""

    def __init__(self, rows, half_width_public, labels_public):
        self.rows = rows
        self.public = sorted({(r.get("noise_scale"), r.get("rank_error"),
                               (r.get("interval") or {}).get("confidence")) for r in rows},
                             key=repr)
        self.half_width = HalfWidth(rows[0].get("interval") or {}) if rows and half_width_public else None
        by_key = {}
        for r in rows:
            by_key.setdefault(tuple(r.get("key", [])), []).append(r.get("label"))
        self.labels = sorted({tuple(v) for v in by_key.values()}) if labels_public else None

    def differs(self, other):
        if not isinstance(other, SelectedRows):
            return True
        if not self.rows or not other.rows:
            return False
        if self.public != other.public or self.labels != other.labels:
            return True
        return self.half_width is not None and self.half_width.differs(other.half_width)

    def __repr__(self):
        return "%d selected rows, public %r, labels %r, %r" % (len(self.rows), self.public,
                                                              self.labels, self.half_width)


# The names D and D' are created under (the dataset, the population it gets of its own): declared
# by the admin, not data, and different between the two runs by construction.
NAME_KEYS = ("dataset", "population", "via_dataset")


def _budget_view(budget, prefix, view):
    if isinstance(budget, dict):
        for k in sorted(budget):
            if k not in NAME_KEYS:
                view[prefix + "budget." + k] = budget[k]
    else:
        view[prefix + "budget"] = budget if budget is not None else ABSENT


def answer_view(q, doc, prefix=""):
    """The public observables of one query answer (dpqctl JSON, or the gRPC response as a dict with
    proto field names): everything but the noisy values."""
    view = {}
    for f in ("mechanism", "epsilon", "delta", "noise_scale", "count_noise_scale", "sensitivity",
              "max_contributions", "max_partitions", "lower", "upper", "cached", "replayed",
              "warnings", "request_id"):
        view[prefix + f] = doc.get(f, ABSENT)
    _budget_view(doc.get("budget"), prefix, view)
    interval = doc.get("interval") or {}
    view[prefix + "interval.confidence"] = interval.get("confidence", ABSENT)
    aggregate = q["aggregate"]
    multi_valued = bool(q.get("group_by")) or aggregate == "histogram"
    half_width_public = aggregate in ("count", "sum", "histogram")
    if half_width_public and not multi_valued:
        view[prefix + "interval.half_width"] = HalfWidth(interval)
    rows = doc.get("rows") or []
    if selects_keys(q):
        text_histogram = aggregate == "histogram" and not q.get("bins")
        view[prefix + "rows(selected)"] = SelectedRows(rows, half_width_public, not text_histogram)
        return view
    view[prefix + "rows.count"] = len(rows)
    for i, r in enumerate(rows):
        p = "%srows[%d]." % (prefix, i)
        view[p + "key"] = list(r.get("key", []))
        view[p + "label"] = r.get("label", ABSENT)
        view[p + "noise_scale"] = r.get("noise_scale", ABSENT)
        view[p + "rank_error"] = r.get("rank_error", ABSENT)
        view[p + "interval.confidence"] = (r.get("interval") or {}).get("confidence", ABSENT)
        if half_width_public:
            view[p + "interval.half_width"] = HalfWidth(r.get("interval") or {})
    return view


def sql_released_rows(result):
    """The cells of one SQL result set as answer_view rows: one per released cell, keyed by the
    row's unreleased cells (its GROUP BY keys: the grid selects no computed values) and labelled
    with the cell's output column."""
    names = [c.get("name") for c in result.get("columns") or []]
    rows = []
    for values, noise in zip(result.get("rows") or [], result.get("noise") or []):
        key = [v for v, n in zip(values, noise) if n is None]
        for name, n in zip(names, noise):
            if n is not None:
                rows.append({"key": key, "label": name, "noise_scale": n.get("noise_scale"),
                             "interval": n.get("interval")})
    return rows


def sql_view(s, doc, prefix=""):
    """The public observables of one `dpqctl sql` answer: the charge (joint and summed) and the
    budget after, cached/replayed, the request id, each result set's columns, and per released
    cell its noise scale, interval confidence and (COUNT, SUM) half-width; the number of rows and
    their keys unless the keys were selected from the data (then as SelectedRows)."""
    view = {}
    for f in ("epsilon", "delta", "epsilon_sum", "delta_sum", "cached", "replayed", "request_id"):
        view[prefix + f] = doc.get(f, ABSENT)
    _budget_view(doc.get("budget"), prefix, view)
    results = doc.get("results") or []
    view[prefix + "results.count"] = len(results)
    for i, result in enumerate(results):
        p = "%sresults[%d]." % (prefix, i)
        view[p + "columns"] = [(c.get("name"), c.get("type")) for c in result.get("columns") or []]
        rows = sql_released_rows(result)
        if s["selects"]:
            view[p + "rows(selected)"] = SelectedRows(
                rows, bool(rows) and rows[0]["label"] in s["half_width"], True)
            continue
        view[p + "rows.count"] = len(result.get("rows") or [])
        view[p + "cells.count"] = len(rows)
        for j, r in enumerate(rows):
            c = "%scells[%d]." % (p, j)
            view[c + "key"] = r["key"]
            view[c + "label"] = r["label"]
            view[c + "noise_scale"] = r["noise_scale"]
            view[c + "interval.confidence"] = (r["interval"] or {}).get("confidence", ABSENT)
            if r["label"] in s["half_width"]:
                view[c + "interval.half_width"] = HalfWidth(r["interval"] or {})
    return view


def error_view(code, message):
    return {"error.code": code, "error.message": message}


def ctl_view(result, success_view):
    view = {"exit": result.returncode}
    if result.returncode != 0:
        view.update(error_view(result.error_code, result.error_message))
        return view
    view.update(success_view(result))
    return view


def flat(doc, prefix=""):
    """A JSON document as {dotted path: leaf}."""
    out = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.update(flat(v, "%s%s." % (prefix, k)))
    elif isinstance(doc, list):
        out[prefix + "length"] = len(doc)
        for i, v in enumerate(doc):
            out.update(flat(v, "%s[%d]." % (prefix, i)))
    else:
        out[prefix.rstrip(".")] = doc
    return out


def differences(a, b):
    """[(observable, value on D, value on D')] for every observable that differs."""
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, ABSENT), b.get(key, ABSENT)
        if isinstance(va, (HalfWidth, SelectedRows)):
            if va.differs(vb):
                out.append((key, va, vb))
        elif isinstance(va, float) and isinstance(vb, float) and math.isnan(va) and math.isnan(vb):
            continue
        elif va != vb:
            out.append((key, va, vb))
    return out


# ---------------------------------------------------------------------------------------------
# Steps: one request each, run the same way on every dataset
# ---------------------------------------------------------------------------------------------

class Step:
    """One request of the grid. `run(ctx, dataset)` returns its public view."""

    def __init__(self, label, run, describe):
        self.label = label
        self._run = run
        self.describe = describe  # (dataset) -> argv text for failure messages

    def run(self, ctx, dataset):
        return self._run(ctx, dataset)


def query_step(q, request_id, analyst="alice"):
    def run(ctx, dataset):
        result = ctx.ctl(analyst, "query", dataset, *query_flags(q), "--request-id", request_id)
        return ctl_view(result, lambda doc: answer_view(q, doc))

    def describe(dataset):
        return "[%s] dpqctl query %s %s --request-id %s" % (analyst, dataset, " ".join(
            repr(a) if " " in a else a for a in query_flags(q)), request_id)
    return Step("query " + request_id, run, describe)


def batch_step(queries, delta, path, request_id):
    def run(ctx, dataset):
        args = ["query-batch", dataset, "--file", path, "--request-id", request_id]
        if delta:
            args += ["--delta", repr(delta)]
        result = ctx.ctl("alice", *args)

        def view(doc):
            v = {f: doc.get(f, ABSENT) for f in ("epsilon", "delta", "epsilon_sum", "replayed",
                                                  "request_id")}
            _budget_view(doc.get("budget"), "", v)
            answers = doc.get("answers") or []
            v["answers.count"] = len(answers)
            for i, (q, a) in enumerate(zip(queries, answers)):
                v.update(answer_view(q, a, "answers[%d]." % i))
            return v
        return ctl_view(result, view)

    def describe(dataset):
        return "dpqctl query-batch %s --file %s --delta %r --request-id %s  (queries: %s)" % (
            dataset, os.path.basename(path), delta, request_id, json.dumps(queries))
    return Step("batch " + request_id, run, describe)


def plan_step(q, mode, index):
    def run(ctx, dataset):
        result = ctx.ctl("alice", "plan", dataset, *query_flags(q), mode[0], _number(mode[1]))
        return ctl_view(result, flat)

    def describe(dataset):
        return "dpqctl plan %s %s %s %s" % (dataset, " ".join(query_flags(q)), mode[0], mode[1])
    return Step("plan %d" % index, run, describe)


def sql_step(s, request_id, analyst="alice"):
    """`dpqctl sql` of one grid statement (the dataset's name put in for {d})."""
    def statement(dataset):
        return s["sql"].replace("{d}", dataset)

    def run(ctx, dataset):
        result = ctx.ctl(analyst, "sql", statement(dataset), "--request-id", request_id)
        return ctl_view(result, lambda doc: sql_view(s, doc))

    def describe(dataset):
        return "[%s] dpqctl sql %r --request-id %s" % (analyst, statement(dataset), request_id)
    return Step("sql " + request_id, run, describe)


def explain_step(s, index):
    """`dpqctl sql --explain`: the plan (parts, bounds, K, mechanism, charge, expected error)
    is data-blind, so all of it is compared but the dataset's name."""
    def run(ctx, dataset):
        result = ctx.ctl("alice", "sql", s["sql"].replace("{d}", dataset), "--explain")
        return ctl_view(result,
                        lambda doc: {k: v for k, v in flat(doc).items() if k not in NAME_KEYS})

    def describe(dataset):
        return "[alice] dpqctl sql %r --explain" % s["sql"].replace("{d}", dataset)
    return Step("explain %d" % index, run, describe)


def grpc_step(q, request_id):
    def run(ctx, dataset):
        client = ctx.grpc_client()
        options = {k: v for k, v in q.items() if k not in ("aggregate", "epsilon")}
        try:
            doc = client.query(dataset, q["aggregate"], q["epsilon"], request_id=request_id, **options)
        except DpqError as e:
            return error_view(e.code, e.message)
        return answer_view(q, doc)

    def describe(dataset):
        return "gRPC AnalystService.Query dataset=%s %r request_id=%s" % (dataset, q, request_id)
    return Step("grpc " + request_id, run, describe)


def show_step():
    def run(ctx, dataset):
        result = ctx.ctl("alice", "dataset", "show", dataset)
        return ctl_view(result, lambda doc: {k: v for k, v in flat(doc).items()
                                             if k not in ("name", "created_at", "population")})
    return Step("dataset show", run, lambda dataset: "[alice] dpqctl dataset show %s" % dataset)




class Context:
    """Runs requests on one dpqd as a named principal (one gRPC channel per thread)."""

    def __init__(self, dpqd, tokens):
        self.dpqd = dpqd
        self.tokens = tokens
        self._clients = {}

    def ctl(self, who, *args):
        return self.dpqd.ctl(*args, token=self.tokens[who], check=False)

    def grpc_client(self):
        key = threading.get_ident()
        if key not in self._clients:
            self._clients[key] = DpqClient(self.dpqd.address, self.tokens["alice"], timeout=60)
        return self._clients[key]

    def close(self):
        for c in self._clients.values():
            c.close()


AUDIT_FIELDS = ("seq", "request_id", "analyst", "aggregate", "mechanism", "column", "epsilon",
                "delta", "noise_scale")


def run_grid(ctx, dataset, steps, deadline):
    views = []
    for step in steps:
        if time.monotonic() > deadline:
            raise AssertionError("grid on %s exceeded its time limit after %d of %d requests" %
                                 (dataset, len(views), len(steps)))
        views.append(step.run(ctx, dataset))
    audit = ctx.dpqd.ctl("audit", dataset)
    entries = [{k: e.get(k) for k in AUDIT_FIELDS} for e in audit["entries"]]
    budget = {k: v for k, v in ctx.dpqd.ctl("budget", "show", dataset).items()
              if k not in NAME_KEYS}
    return views, entries, budget


def run_grids(grid, ctx, targets, steps):
    """grid(ctx, target, steps, deadline) for every {key: target}, GRID_WORKERS at a time, all
    within GRID_TIME_LIMIT_S: ({key: its result}, {key: the exception it raised})."""
    deadline = time.monotonic() + GRID_TIME_LIMIT_S
    results, errors = {}, {}
    with concurrent.futures.ThreadPoolExecutor(GRID_WORKERS) as pool:
        futures = {pool.submit(grid, ctx, target, steps, deadline): key
                   for key, target in targets.items()}
        for future in concurrent.futures.as_completed(futures):
            try:
                results[futures[future]] = future.result()
            except Exception as e:  # pylint: disable=broad-except
                errors[futures[future]] = e
    return results, errors


def _short(value, limit=300):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
