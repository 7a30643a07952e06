#!/usr/bin/python3
"""End-to-end: the alerting rules, the Grafana dashboard and their docker-compose wiring agree with
what dpqd really exports.

- `promtool check rules` / `promtool test rules` on deploy/prometheus/alerts.yml and its unit tests
  (alerts_test.yml, which must show every alert both firing and not firing), and
  `promtool check config` on deploy/prometheus/prometheus.yml.
- Every metric named by the PromQL of deploy/grafana/dpq.json and of alerts.yml is exported by a
  live dpqd that has answered, refused and rejected a few queries and verified an audit chain.
  The only exceptions are the series Prometheus makes itself (`up`, `ALERTS`) and
  PENDING_SERVER_METRICS (empty now that dpqd exports the audit-verification metrics): the test
  asserts that they are exactly the missing ones, so a rule naming a metric dpqd lacks fails.
- A real Prometheus loads alerts.yml, scrapes that dpqd, evaluates every rule without error, raises
  the budget and rejection alerts for the population and the dataset that deserve them and for no
  other, answers every dashboard query with data, and raises DpqdDown once dpqd stops.
- A dpqd exports the audit-verification metrics of a population it has not verified yet, at 0.
- docker-compose.yml provisions Grafana with the datasource and the dashboard, Prometheus with its
  configuration and the rules, and every host file it names exists.

YAML is read with PyYAML (Debian's python3-yaml) when it is installed, else with the small parser
below, which covers the subset these files use; where both exist, a test checks they agree.
Skipped only when promtool or prometheus is missing (each test names which).
"""

import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

try:
    import yaml  # python3-yaml
except ImportError:  # pragma: no cover - depends on the machine
    yaml = None

REPO = harness.REPO_ROOT
PROM_DIR = os.path.join(REPO, "deploy", "prometheus")
ALERTS = os.path.join(PROM_DIR, "alerts.yml")
ALERTS_TEST = os.path.join(PROM_DIR, "alerts_test.yml")
PROM_CONFIG = os.path.join(PROM_DIR, "prometheus.yml")
DASHBOARD = os.path.join(REPO, "deploy", "grafana", "dpq.json")
GRAFANA_DATASOURCE = os.path.join(REPO, "deploy", "grafana", "provisioning", "datasources",
                                  "dpq.yml")
GRAFANA_PROVIDER = os.path.join(REPO, "deploy", "grafana", "provisioning", "dashboards", "dpq.yml")
COMPOSE = os.path.join(REPO, "docker-compose.yml")
YAML_FILES = (ALERTS, ALERTS_TEST, PROM_CONFIG, GRAFANA_DATASOURCE, GRAFANA_PROVIDER, COMPOSE)

PROMTOOL = harness.PROMTOOL
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL_TIMEOUT_S = 120
PROMETHEUS_WAIT_S = 60

# Series that Prometheus itself creates: the scrape health of each target and the alert states.
PROMETHEUS_SERIES = {"up", "ALERTS"}
# Metrics the alerts use that dpqd does not export yet (none: dpq_audit_verify_ok and
# dpq_audit_verify_timestamp_seconds exist for every population from dpqd's first scrape, 0 until
# the VerifyAudit RPC or dpqd's periodic check has verified it).
PENDING_SERVER_METRICS = set()
# Counters of events that a healthy dpqd never sees, so a live dpqd exports no series of them:
# dpq_scan_data_errors_total counts scans answered by the numeric fallback (a bug; scans are total
# by construction). The test checks that dpqd registers the name instead, and the rule's promtool
# unit test shows the alert firing on the series. tests/db/query_engine_test.cc drives the event.
EVENT_ONLY_METRICS = {"dpq_scan_data_errors_total"}
METRICS_SOURCE = os.path.join(harness.REPO_ROOT, "server", "metrics", "metrics.cc")
# What the dashboard must show: a metric of each.
DASHBOARD_MUST_USE = {
    "budget remaining per population": {"dpq_budget_remaining"},
    "time block spend": {"dpq_block_budget_spent", "dpq_block_budget_limit"},
    "epsilon spent per analyst": {"dpq_epsilon_spent_total"},
    "queries per second by outcome": {"dpq_queries_total"},
    "rejections per second": {"dpq_budget_rejections_total"},
    "latency percentiles": {"dpq_query_duration_seconds_bucket"},
    "database pool": {"dpq_db_connections", "dpq_db_connections_opened_total",
                      "dpq_db_connections_closed_total", "dpq_db_connect_failures_total"},
}
# The alerts that must exist, by name in alerts.yml.
REQUIRED_ALERTS = {"DpqPopulationBudgetLow", "DpqBudgetRejectionBurst", "DpqdDown",
                   "DpqLedgerUnreadable", "DpqAuditVerifyFailing", "DpqSlowQueries",
                   "DpqTimeBlockBudgetLow"}



# ---------------------------------------------------------------------------------------------
# A small YAML reader for the subset of YAML in the files above: block mappings and sequences,
# plain / single- / double-quoted scalars, one-line flow sequences, literal and folded block
# scalars, comments. Anything else raises ValueError instead of being guessed.
# ---------------------------------------------------------------------------------------------

_KEY_RE = re.compile(r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s'"#\[\]{}&*!|>%@`-][^#]*?|-[^\s#][^#]*?)"""
                     r"""\s*:(?:\s+|$)(.*)$""")
_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^[-+]?([0-9][0-9_]*\.[0-9_]*|\.[0-9_]+)([eE][-+][0-9]+)?$")
_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def _indent_of(line):
    return len(line) - len(line.lstrip(" "))


def _strip_comment(text):
    """Drops a trailing ` # comment` outside quotes."""
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote == "'":
            if ch == "'":
                if text[i + 1:i + 2] == "'":
                    i += 1  # '' is an escaped quote
                else:
                    quote = None
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = None
        elif ch in "'\"" and (i == 0 or text[i - 1] in " [,"):
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


def _plain(text):
    if text in ("", "~") or text.lower() == "null":
        return None
    if text.lower() in _BOOLS:
        return _BOOLS[text.lower()]
    if _INT_RE.match(text):
        return int(text.replace("_", ""))
    if _FLOAT_RE.match(text):
        return float(text.replace("_", ""))
    return text


def _scalar(text, where):
    text = _strip_comment(text.strip())
    if text.startswith("'"):
        if not (text.endswith("'") and len(text) >= 2):
            raise ValueError("%s: unterminated single-quoted scalar" % where)
        return text[1:-1].replace("''", "'")
    if text.startswith('"'):
        if not (text.endswith('"') and len(text) >= 2):
            raise ValueError("%s: unterminated double-quoted scalar" % where)
        return json.loads(text)
    if text.startswith("["):
        if not text.endswith("]"):
            raise ValueError("%s: multi-line flow sequences are not supported" % where)
        inner = text[1:-1].strip()
        if not inner:
            return []
        items, current, quote = [], "", None
        for ch in inner:
            if quote:
                current += ch
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
                current += ch
            elif ch == ",":
                items.append(current)
                current = ""
            else:
                current += ch
        items.append(current)
        return [_scalar(item, where) for item in items]
    if text[:1] in ("{", "&", "*", "!", "%", "@", "`"):
        raise ValueError("%s: unsupported YAML construct %r" % (where, text))
    return _plain(text)


class MiniYaml:
    def __init__(self, text, name="<yaml>"):
        self.lines = text.split("\n")
        self.name = name
        self.i = 0

    def _where(self):
        return "%s:%d" % (self.name, self.i + 1)

    def _skip(self):
        while self.i < len(self.lines):
            stripped = self.lines[self.i].strip()
            if stripped and not stripped.startswith("#"):
                return True
            self.i += 1
        return False

    def parse(self):
        if not self._skip():
            return None
        if "\t" in self.lines[self.i][:_indent_of(self.lines[self.i]) + 1]:
            raise ValueError("%s: tab indentation" % self._where())
        value = self._node(_indent_of(self.lines[self.i]))
        if self._skip():
            raise ValueError("%s: unexpected content" % self._where())
        return value

    def _node(self, indent):
        content = self.lines[self.i].strip()
        if content == "-" or content.startswith("- "):
            return self._sequence(indent)
        if _KEY_RE.match(_strip_comment(content)):
            return self._mapping(indent)
        value = _scalar(content, self._where())
        self.i += 1
        self._no_continuation(indent)
        return value

    def _no_continuation(self, indent):
        if self._skip() and _indent_of(self.lines[self.i]) > indent:
            raise ValueError("%s: multi-line plain scalars are not supported" % self._where())

    def _sequence(self, indent):
        items = []
        while self._skip():
            line = self.lines[self.i]
            if _indent_of(line) != indent:
                if _indent_of(line) > indent:
                    raise ValueError("%s: bad indentation" % self._where())
                break
            content = line.strip()
            if not (content == "-" or content.startswith("- ")):
                break
            rest = content[1:].lstrip()
            if not rest or rest.startswith("#"):
                self.i += 1
                if not self._skip() or _indent_of(self.lines[self.i]) <= indent:
                    items.append(None)
                else:
                    items.append(self._node(_indent_of(self.lines[self.i])))
                continue
            column = indent + len(content) - len(rest)
            self.lines[self.i] = " " * column + rest  # the item's content starts a node there
            items.append(self._node(column))
        return items

    def _mapping(self, indent):
        result = {}
        while self._skip():
            line = self.lines[self.i]
            if _indent_of(line) != indent:
                if _indent_of(line) > indent:
                    raise ValueError("%s: bad indentation" % self._where())
                break
            content = line.strip()
            if content == "-" or content.startswith("- "):
                break
            m = _KEY_RE.match(content)
            if not m:
                raise ValueError("%s: expected `key: value`" % self._where())
            key = _scalar(m.group(1), self._where())
            if key in result:
                raise ValueError("%s: duplicate key %r" % (self._where(), key))
            rest = _strip_comment(m.group(2))
            self.i += 1
            if rest[:1] in ("|", ">"):
                result[key] = self._block_scalar(rest, indent)
            elif rest:
                result[key] = _scalar(rest, self._where())
                self._no_continuation(indent)
            elif not self._skip():
                result[key] = None
            else:
                nxt = self.lines[self.i]
                if _indent_of(nxt) > indent:
                    result[key] = self._node(_indent_of(nxt))
                elif _indent_of(nxt) == indent and (nxt.strip() == "-" or
                                                    nxt.strip().startswith("- ")):
                    result[key] = self._sequence(indent)
                else:
                    result[key] = None
        return result

    def _block_scalar(self, header, parent_indent):
        if header not in ("|", "|-", ">", ">-"):
            raise ValueError("%s: unsupported block scalar header %r" % (self._where(), header))
        start = self.i
        block_indent = None
        body = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip():
                if block_indent is None:
                    block_indent = _indent_of(line)
                    if block_indent <= parent_indent:
                        break
                if _indent_of(line) < block_indent:
                    break
                body.append(line[block_indent:])
            else:
                body.append("")
            self.i += 1
        while body and body[-1] == "":
            body.pop()
            self.i -= 1
        if header[0] == "|":
            text = "\n".join(body)
        else:
            parts = []
            for j, line in enumerate(body):
                if line.startswith(" "):
                    raise ValueError("%s:%d: more-indented lines in a folded scalar are not "
                                     "supported" % (self.name, start + j + 1))
                if not line:
                    parts.append("\n")
                elif parts and parts[-1] not in ("\n",):
                    parts.append(" " + line)
                else:
                    parts.append(line)
            text = "".join(parts)
        return text if header.endswith("-") or not text else text + "\n"


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if yaml is not None:
        return yaml.safe_load(text)
    return MiniYaml(text, os.path.basename(path)).parse()


# ---------------------------------------------------------------------------------------------
# Metric names in PromQL
# ---------------------------------------------------------------------------------------------

_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                 "or", "unless", "offset", "inf", "nan"}


def promql_metric_names(expr):
    """The metric names a PromQL expression selects (Grafana variables allowed inside {} and [])."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # strings
    s = re.sub(r"\{[^{}]*\}", " ", s)   # label matchers (strings are empty by now)
    s = re.sub(r"\[[^\[\]]*\]", " ", s)  # range selectors and subqueries
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", s)
    s = re.sub(r"\boffset\s+-?[0-9a-z]+", " ", s)
    s = re.sub(r"(?<![A-Za-z0-9_:.])[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?", " ", s)  # numbers
    names = set()
    for m in re.finditer(r"(?<![A-Za-z0-9_:$])[A-Za-z_:][A-Za-z0-9_:]*", s):
        word = m.group(0)
        if s[m.end():].lstrip().startswith("("):
            continue  # a function or an aggregation
        if word.lower() in _PROMQL_WORDS:
            continue
        names.add(word)
    return names


def grafana_variable_metric_names(query):
    """Metric names of a Grafana Prometheus variable query (label_values, query_result, ...)."""
    m = re.match(r"^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", query)
    if m:
        return promql_metric_names(m.group(1))
    m = re.match(r"^\s*label_values\(\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$", query)
    if m:
        return set()
    m = re.match(r"^\s*(?:query_result|metrics)\((.*)\)\s*$", query)
    if m:
        return promql_metric_names(m.group(1))
    return promql_metric_names(query)


def dashboard_panels(dashboard):
    """Every panel, rows' nested panels included."""
    for panel in dashboard.get("panels", []):
        yield panel
        for inner in panel.get("panels", []) or []:
            yield inner


def dashboard_queries(dashboard):
    """[(where, PromQL)] of every panel target and every query variable."""
    queries = []
    for panel in dashboard_panels(dashboard):
        for target in panel.get("targets", []) or []:
            if target.get("expr"):
                queries.append(("panel %r target %s" % (panel.get("title"), target.get("refId")),
                                target["expr"]))
    return queries


def dashboard_metric_names(dashboard):
    names = set()
    for _where, expr in dashboard_queries(dashboard):
        names |= promql_metric_names(expr)
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var.get("query")
            if isinstance(query, dict):
                query = query.get("query", "")
            names |= grafana_variable_metric_names(query or var.get("definition", ""))
    return names


def expand_grafana(expr, rate_interval="1m"):
    """A dashboard expression as Prometheus sees it: Grafana's variables replaced."""
    return (expr.replace("$__rate_interval", rate_interval)
            .replace("$__interval", rate_interval)
            .replace("$population", ".*")
            .replace("$dataset", ".*"))


def load_dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def alert_rules(rules_doc):
    return [rule for group in rules_doc["groups"] for rule in group["rules"] if "alert" in rule]


def alerts_metric_names(rules_doc):
    names = set()
    for rule in alert_rules(rules_doc):
        names |= promql_metric_names(rule["expr"])
    return names


def exported_names(scrape_text):
    """Sample names of a /metrics exposition, plus its family names (# TYPE lines)."""
    names = {name for (name, _labels, _value) in harness.parse_metrics(scrape_text)}
    for line in scrape_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "#" and parts[1] == "TYPE":
            names.add(parts[2])
    return names


def run_promtool(*args, cwd=None):
    proc = subprocess.run([PROMTOOL] + list(args), stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=PROMTOOL_TIMEOUT_S, cwd=cwd)
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# Static checks
# ---------------------------------------------------------------------------------------------

class HelpersTest(unittest.TestCase):
    """The two parsers the other tests rely on, on inputs with known answers."""

    def test_promql_metric_names(self):
        cases = {
            'sum by (outcome) (rate(dpq_queries_total{dataset=~"$dataset"}[$__rate_interval]))':
                {"dpq_queries_total"},
            'histogram_quantile(0.99, sum by (le) (rate(dpq_query_duration_seconds_bucket[5m]))) '
            '> 2.5': {"dpq_query_duration_seconds_bucket"},
            'max by (population, param) (dpq_budget_remaining) / max by (population, param) '
            '(dpq_budget_limit) < 0.10': {"dpq_budget_remaining", "dpq_budget_limit"},
            'up{job="dpq"} == 0 or absent(up{job="dpq"})': {"up"},
            'time() - max by (population) (max_over_time(dpq_audit_verify_timestamp_seconds[2d])) '
            '> 2 * 86400':
                {"dpq_audit_verify_timestamp_seconds"},
            'a_metric offset 5m + on (x) group_left (y) b:recorded:rate5m * 1e-3':
                {"a_metric", "b:recorded:rate5m"},
            'sum(rate(x_total{l="by (a) {b}"}[1m])) without (instance) unless bool_metric':
                {"x_total", "bool_metric"},
        }
        for expr, want in cases.items():
            self.assertEqual(promql_metric_names(expr), want, expr)
        self.assertEqual(
            grafana_variable_metric_names("label_values(dpq_budget_limit, population)"),
            {"dpq_budget_limit"})
        self.assertEqual(grafana_variable_metric_names("label_values(dataset)"), set())

    def test_mini_yaml_on_known_input(self):
        text = ("# comment\n"
                "a: 1\n"
                "b: 'it''s: #not a comment'\n"
                "c: [x, 'y', \"z\"]\n"
                "d:\n"
                "  - e: true   # comment\n"
                "    f: |\n"
                "      line 1\n"
                "        indented\n"
                "    g: >-\n"
                "      folded\n"
                "      text\n"
                "  - plain:with:colons\n"
                "h:\n"
                "- 2.5\n"
                "- ~\n"
                "i: \"q\\\"uote\"\n"
                "j:\n")
        want = {"a": 1, "b": "it's: #not a comment", "c": ["x", "y", "z"],
                "d": [{"e": True, "f": "line 1\n  indented\n", "g": "folded text"},
                      "plain:with:colons"],
                "h": [2.5, None], "i": 'q"uote', "j": None}
        self.assertEqual(MiniYaml(text).parse(), want)
        if yaml is not None:
            self.assertEqual(yaml.safe_load(text), want)
        with self.assertRaises(ValueError):
            MiniYaml("a: {b: 1}\n").parse()
        with self.assertRaises(ValueError):
            MiniYaml("a: plain\n  continued\n").parse()

    @unittest.skipIf(yaml is None, "PyYAML (python3-yaml) is not installed: nothing to compare")
    def test_mini_yaml_agrees_with_pyyaml_on_every_config_file(self):
        for path in YAML_FILES:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            self.assertEqual(MiniYaml(text, path).parse(), yaml.safe_load(text), path)


class AlertRulesTest(unittest.TestCase):

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_promtool_check_rules(self):
        code, out = run_promtool("check", "rules", ALERTS)
        self.assertEqual(code, 0, out)
        self.assertIn("SUCCESS", out)

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_promtool_test_rules(self):
        code, out = run_promtool("test", "rules", os.path.basename(ALERTS_TEST), cwd=PROM_DIR)
        self.assertEqual(code, 0, out)
        self.assertIn("SUCCESS", out)

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_promtool_check_config_loads_the_rules(self):
        code, out = run_promtool("check", "config", PROM_CONFIG)
        self.assertEqual(code, 0, out)
        self.assertIn("%d rules found" % len(alert_rules(load_yaml(ALERTS))), out)

    def test_every_alert_is_required_and_documented(self):
        rules = alert_rules(load_yaml(ALERTS))
        names = [rule["alert"] for rule in rules]
        self.assertEqual(len(names), len(set(names)), names)
        self.assertLessEqual(REQUIRED_ALERTS, set(names))
        for rule in rules:
            annotations = rule.get("annotations", {})
            for key in ("summary", "description"):
                self.assertTrue(annotations.get(key, "").strip(), "%s: no %s" % (rule["alert"], key))
            self.assertIn(rule.get("labels", {}).get("severity"), ("warning", "critical"),
                          rule["alert"])
        exprs = {rule["alert"]: rule["expr"] for rule in rules}
        self.assertRegex(exprs["DpqdDown"], r'up\{job="dpq"\}\s*==\s*0')
        self.assertRegex(exprs["DpqLedgerUnreadable"], r"dpq_ledger_scrape_ok\s*==\s*0")
        self.assertRegex(exprs["DpqAuditVerifyFailing"], r"dpq_audit_verify_ok\s*==\s*0")
        # ok is 0 before the first verification too: the rule must require one (timestamp > 0).
        self.assertRegex(exprs["DpqAuditVerifyFailing"],
                         r"and\s+dpq_audit_verify_timestamp_seconds\s*>\s*0")

    def test_the_prometheus_job_is_the_one_the_rules_match(self):
        jobs = [c["job_name"] for c in load_yaml(PROM_CONFIG)["scrape_configs"]]
        self.assertEqual(jobs, ["dpq"])
        self.assertEqual(load_yaml(PROM_CONFIG)["rule_files"], ["alerts.yml"])

    def test_unit_tests_show_every_alert_firing_and_not_firing(self):
        names = {rule["alert"] for rule in alert_rules(load_yaml(ALERTS))}
        doc = load_yaml(ALERTS_TEST)
        self.assertEqual(doc["rule_files"], ["alerts.yml"])
        firing, silent = set(), set()
        for group in doc["tests"]:
            for case in group.get("alert_rule_test", []) or []:
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
                for alert in case.get("exp_alerts") or []:
                    # Annotations are compared too, so their templates are tested.
                    self.assertIn("summary", alert.get("exp_annotations", {}), case)
                    self.assertIn("description", alert.get("exp_annotations", {}), case)
        self.assertEqual(firing, names, "alerts never shown firing: %s" % (names - firing))
        self.assertEqual(silent, names, "alerts never shown silent: %s" % (names - silent))


class DashboardAndComposeTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dashboard = load_dashboard()
        cls.compose = load_yaml(COMPOSE)

    def test_dashboard_shows_one_panel_of_each_required_metric(self):
        names = dashboard_metric_names(self.dashboard)
        for topic, metrics in DASHBOARD_MUST_USE.items():
            self.assertLessEqual(metrics, names, "the dashboard lacks %s" % topic)
        ids = [p["id"] for p in dashboard_panels(self.dashboard)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are not unique")
        self.assertTrue(self.dashboard.get("uid"))
        for panel in dashboard_panels(self.dashboard):
            if panel.get("type") == "row":
                continue
            self.assertTrue(panel.get("targets"), "panel %r has no query" % panel.get("title"))
            for target in panel["targets"]:
                self.assertTrue(target.get("expr", "").strip(), panel.get("title"))

    def test_quantile_panels_use_the_histogram_buckets_by_le(self):
        for where, expr in dashboard_queries(self.dashboard):
            if "histogram_quantile" in expr:
                self.assertRegex(expr, r"by \(le\)", where)
                self.assertIn("_bucket", expr, where)

    @unittest.skipUnless(os.path.exists(PROMTOOL), "%s is not installed" % PROMTOOL)
    def test_every_dashboard_query_is_valid_promql(self):
        # promtool parses each expression as a recording rule.
        work = tempfile.mkdtemp(prefix="dpq-e2e-dash-")
        self.addCleanup(shutil.rmtree, work, True)
        queries = dashboard_queries(self.dashboard)
        self.assertTrue(queries)
        rules = {"groups": [{"name": "dashboard", "rules": [
            {"record": "dashboard:query_%d" % i, "expr": expand_grafana(expr)}
            for i, (_where, expr) in enumerate(queries)]}]}
        path = os.path.join(work, "dashboard_rules.yml")
        with open(path, "w") as f:
            json.dump(rules, f)  # JSON is YAML
        code, out = run_promtool("check", "rules", path)
        self.assertEqual(code, 0, "%s\n%s" % (out, "\n".join(
            "%d: %s: %s" % (i, w, e) for i, (w, e) in enumerate(queries))))

    def test_panels_use_the_provisioned_datasource(self):
        datasources = load_yaml(GRAFANA_DATASOURCE)["datasources"]
        self.assertEqual(len(datasources), 1, datasources)
        ds = datasources[0]
        self.assertEqual(ds["type"], "prometheus")
        variables = {v["name"]: v for v in self.dashboard["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        self.assertEqual(variables["datasource"]["current"]["value"], ds["uid"])
        allowed = ({"type": "prometheus", "uid": "${datasource}"},
                   {"type": "prometheus", "uid": ds["uid"]})
        for panel in dashboard_panels(self.dashboard):
            if panel.get("type") == "row":
                continue
            self.assertIn(panel.get("datasource"), allowed, panel.get("title"))
            for target in panel["targets"]:
                self.assertIn(target.get("datasource", panel["datasource"]), allowed,
                              panel.get("title"))
        # The datasource points at the compose file's Prometheus service and its port.
        m = re.match(r"^http://([a-z0-9_-]+):([0-9]+)$", ds["url"])
        self.assertTrue(m, ds["url"])
        self.assertIn(m.group(1), self.compose["services"])
        self.assertIn("prometheus", self.compose["services"][m.group(1)]["image"])
        self.assertEqual(m.group(2), "9090")

    def _mounts(self, service):
        """{container path: host path} of a service's bind mounts (named volumes excluded)."""
        mounts = {}
        for volume in self.compose["services"][service].get("volumes", []):
            parts = volume.split(":")
            if parts[0].startswith((".", "/")):
                mounts[parts[1]] = parts[0]
                self.assertEqual(parts[2:], ["ro"], "%s: mount %s read-only" % (service, volume))
        return mounts

    def _host(self, relative):
        return os.path.normpath(os.path.join(os.path.dirname(COMPOSE), relative))

    def test_compose_provisions_grafana(self):
        services = self.compose["services"]
        self.assertIn("grafana", services)
        grafana = services["grafana"]
        self.assertTrue(grafana["image"].startswith("grafana/grafana:"), grafana["image"])
        mounts = {c: self._host(h) for c, h in self._mounts("grafana").items()}
        by_host = {h: c for c, h in mounts.items()}
        ds_in = by_host.get(GRAFANA_DATASOURCE)
        provider_in = by_host.get(GRAFANA_PROVIDER)
        dashboard_in = by_host.get(DASHBOARD)
        self.assertIsNotNone(ds_in, "the datasource file is not mounted: %s" % mounts)
        self.assertIsNotNone(provider_in, "the dashboard provider is not mounted: %s" % mounts)
        self.assertIsNotNone(dashboard_in, "the dashboard is not mounted: %s" % mounts)
        self.assertRegex(ds_in, r"^/etc/grafana/provisioning/datasources/[^/]+\.ya?ml$")
        self.assertRegex(provider_in, r"^/etc/grafana/provisioning/dashboards/[^/]+\.ya?ml$")
        # The provider loads the folder the dashboard is mounted in.
        providers = load_yaml(GRAFANA_PROVIDER)["providers"]
        self.assertEqual([p["type"] for p in providers], ["file"])
        self.assertEqual(os.path.dirname(dashboard_in), providers[0]["options"]["path"].rstrip("/"))
        self.assertIn("prometheus", grafana.get("depends_on", []))
        # The admin password comes from .env, never a default.
        password = grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"]
        self.assertRegex(password, r"^\$\{[A-Z_]+:\?")
        for port in grafana.get("ports", []):
            self.assertTrue(str(port).startswith("127.0.0.1:"), port)

    def test_compose_gives_prometheus_its_config_and_rules(self):
        prometheus = self.compose["services"]["prometheus"]
        mounts = self._mounts("prometheus")
        flags = [a for a in prometheus.get("command", []) if a.startswith("--config.file=")]
        self.assertEqual(len(flags), 1, prometheus.get("command"))
        config_in = flags[0].split("=", 1)[1]
        self.assertIn(config_in, mounts)
        self.assertEqual(self._host(mounts[config_in]), PROM_CONFIG)
        for rule_file in load_yaml(PROM_CONFIG)["rule_files"]:
            rules_in = os.path.normpath(os.path.join(os.path.dirname(config_in), rule_file))
            self.assertIn(rules_in, mounts, "rule file %s not mounted" % rule_file)
            self.assertEqual(self._host(mounts[rules_in]), ALERTS)
        # The scrape target is the dpqd service on its metrics port.
        targets = [t for c in load_yaml(PROM_CONFIG)["scrape_configs"]
                   for s in c["static_configs"] for t in s["targets"]]
        for target in targets:
            host, port = target.split(":")
            self.assertIn(host, self.compose["services"])
            self.assertEqual(port, "9464")

    def test_every_file_the_compose_file_names_exists(self):
        named = []
        for name, service in self.compose["services"].items():
            for volume in service.get("volumes", []):
                host = volume.split(":")[0]
                if host.startswith((".", "/")):
                    named.append((name, host))
            build = service.get("build")
            if build is not None:
                context = build if isinstance(build, str) else build.get("context", ".")
                named.append((name, context))
                dockerfile = "Dockerfile" if isinstance(build, str) else build.get(
                    "dockerfile", "Dockerfile")
                named.append((name, os.path.join(context, dockerfile)))
            env_file = service.get("env_file")
            for f in ([env_file] if isinstance(env_file, str) else env_file or []):
                named.append((name, f))
        self.assertTrue(named)
        for service, path in named:
            self.assertTrue(os.path.exists(self._host(path)),
                            "service %s names %s, which does not exist" % (service, path))
        declared = set(self.compose.get("volumes") or {})
        for name, service in self.compose["services"].items():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if not source.startswith((".", "/")):
                    self.assertIn(source, declared, "%s: undeclared volume %s" % (name, source))


# ---------------------------------------------------------------------------------------------
# Against a live dpqd
# ---------------------------------------------------------------------------------------------

def populate(test_case, dpqd):
    """Two datasets with typed columns, a third with a budget per day block, two analysts,
    answered, refused and invalid queries: every labelled series dpqd exports exists afterwards.
    slid ends with 5 % of its epsilon budget left (low), salaries with 5/6 of it (healthy), the
    current and previous day blocks of visits with 0.8 of 1 each (healthy). Returns the analysts'
    tokens."""
    test_case.create_slid(dpqd, bounds=("wages=0:100", "age=0:120"))
    test_case.create_salaries(dpqd)
    alice = test_case.create_analyst(dpqd, "alice")
    bob = test_case.create_analyst(dpqd, "bob")
    dpqd.ctl("grant", "alice", "slid")
    dpqd.ctl("grant", "alice", "salaries")
    dpqd.ctl("grant", "bob", "salaries")
    dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
    dpqd.ctl("budget", "set", "salaries", "--epsilon", 3, "--delta", 1e-6)
    test_case.create_recent_visits(dpqd, "visits")
    dpqd.ctl("grant", "alice", "visits")
    # The current block (today) and, by a range over the last two days, the previous one too.
    dpqd.ctl("query", "visits", "--aggregate", "count", "--epsilon", 0.2, "--where",
             "day >= '%s'" % (datetime.datetime.now(datetime.timezone.utc).date() -
                              datetime.timedelta(days=1)), token=alice)
    dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, token=alice)
    dpqd.ctl("query", "slid", "--aggregate", "mean", "--column", "wages", "--epsilon", 0.15,
             "--mechanism", "gaussian", "--delta", 1e-7, token=alice)
    dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.7, token=alice)
    dpqd.ctl("query", "salaries", "--aggregate", "sum", "--column", "salary", "--epsilon", 0.25,
             token=alice)
    dpqd.ctl("query", "salaries", "--aggregate", "count", "--epsilon", 0.25, token=bob)
    refused = dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.5, token=alice,
                       check=False)
    test_case.assert_error(refused, "RESOURCE_EXHAUSTED")
    invalid = dpqd.ctl("query", "salaries", "--aggregate", "sum", "--column", "no_such_column",
                       "--epsilon", 0.1, token=bob, check=False)
    test_case.assert_error(invalid, "INVALID_ARGUMENT")
    budget = dpqd.ctl("budget", "show", "slid")
    test_case.assertAlmostEqual(budget["epsilon_remaining"], 0.05, delta=1e-9)
    # The verification metrics (dpq_audit_verify_ok, ..._timestamp_seconds) of both datasets.
    dpqd.ctl("audit", "verify", "slid")
    dpqd.ctl("audit", "verify", "salaries")
    dpqd.ctl("audit", "verify", "visits")
    return alice, bob


class LiveMetricsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        case = cls("test_dashboard_metrics_are_exported")
        populate(case, cls.dpqd)
        cls.text = cls.dpqd.scrape()
        cls.exported = exported_names(cls.text)

    def test_dashboard_metrics_are_exported(self):
        used = dashboard_metric_names(load_dashboard())
        missing = used - self.exported - PROMETHEUS_SERIES
        self.assertEqual(missing, set(),
                         "the dashboard queries metrics dpqd does not export: %s" % sorted(missing))

    def test_alert_metrics_are_exported(self):
        used = alerts_metric_names(load_yaml(ALERTS))
        self.assertLessEqual(PENDING_SERVER_METRICS, used)
        missing = used - self.exported - PROMETHEUS_SERIES - EVENT_ONLY_METRICS
        with open(METRICS_SOURCE) as f:
            source = f.read()
        for name in EVENT_ONLY_METRICS:
            self.assertIn(name, used, "an event-only metric no alert reads: %s" % name)
            self.assertIn('.Name("%s")' % name, source, "dpqd does not register %s" % name)
        # Exactly PENDING_SERVER_METRICS (now none) is missing; any other missing name is a
        # wrong rule or a metric dpqd stopped exporting.
        self.assertEqual(missing, PENDING_SERVER_METRICS,
                         "alert metrics not exported: %s" % sorted(missing))
        samples = harness.parse_metrics(self.text)
        self.assertEqual(harness.metric_values(samples, "dpq_audit_verify_ok", population="slid"),
                         [1.0])

    def test_labelled_series_the_panels_group_by_exist(self):
        samples = harness.parse_metrics(self.text)
        outcomes = {l.get("outcome") for (n, l, _v) in samples if n == "dpq_queries_total"}
        self.assertLessEqual({"ok", "resource_exhausted", "invalid_argument"}, outcomes)
        analysts = {l.get("analyst") for (n, l, _v) in samples if n == "dpq_epsilon_spent_total"}
        self.assertEqual(analysts, {"alice", "bob"})
        self.assertEqual(harness.metric_values(samples, "dpq_budget_rejections_total",
                                               dataset="slid"), [1.0])
        params = {(l.get("population"), l.get("param")) for (n, l, _v) in samples
                  if n == "dpq_budget_limit"}
        self.assertEqual(params, {(d, p) for d in ("slid", "salaries")
                                  for p in ("epsilon", "delta")})
        # The per-block population has block series instead (two blocks, bounded).
        blocks = {(l.get("population"), l.get("block"), l.get("param")) for (n, l, _v) in samples
                  if n == "dpq_block_budget_limit"}
        self.assertEqual(blocks, {("visits", b, p) for b in ("current", "previous")
                                  for p in ("epsilon", "delta")})
        states = {l.get("state") for (n, l, _v) in samples if n == "dpq_db_connections"}
        self.assertEqual(states, {"in_use", "idle"})


class FreshDpqdVerificationMetricsTest(harness.DpqdTestCase):
    """A population dpqd has not verified yet is exported with dpq_audit_verify_timestamp_seconds
    0 and dpq_audit_verify_ok 0 (alerts.yml: DpqAuditVerifyStale fires on it; DpqAuditVerifyFailing
    does not), and a verification sets both."""

    def test_a_population_not_verified_yet_is_exported_at_zero(self):
        dpqd = self.new_dpqd(start=False)
        # No periodic pass: only `dpqctl audit verify` verifies, so nothing has before it.
        dpqd.extra_args = ["--audit-verify-seconds=0"]
        dpqd.start()
        self.create_slid(dpqd)
        samples = dpqd.metrics()
        self.assertEqual(harness.metric_values(samples, "dpq_audit_verify_timestamp_seconds",
                                               population="slid"), [0.0])
        self.assertEqual(harness.metric_values(samples, "dpq_audit_verify_ok", population="slid"),
                         [0.0])
        before = time.time()
        dpqd.ctl("audit", "verify", "slid")
        samples = dpqd.metrics()
        self.assertEqual(harness.metric_values(samples, "dpq_audit_verify_ok", population="slid"),
                         [1.0])
        at = harness.metric_values(samples, "dpq_audit_verify_timestamp_seconds",
                                   population="slid")
        self.assertEqual(len(at), 1, at)
        self.assertGreater(at[0], before - 1)  # the exposition may round to the second


def _get_json(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read().decode("utf-8"))


class LivePrometheusTest(harness.DpqdTestCase):
    """A real Prometheus with deploy/prometheus/alerts.yml, scraping a real dpqd every second."""

    @unittest.skipUnless(os.path.exists(PROMETHEUS), "%s is not installed" % PROMETHEUS)
    def test_prometheus_evaluates_the_rules_and_the_dashboard_on_real_series(self):
        dpqd = self.new_dpqd()
        alice, _bob = populate(self, dpqd)
        base = self._start_prometheus(dpqd)

        def target_up():
            targets = _get_json(base + "/api/v1/targets")["data"]["activeTargets"]
            return any(t.get("health") == "up" and t["labels"].get("job") == "dpq"
                       for t in targets)

        harness.wait_until(target_up, PROMETHEUS_WAIT_S, "the dpq target to be up", 0.5)

        # Every rule of alerts.yml is loaded and evaluates without error.
        rule_names = {rule["alert"] for rule in alert_rules(load_yaml(ALERTS))}

        def rules_healthy():
            groups = _get_json(base + "/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if {r["name"] for r in rules} != rule_names:
                raise AssertionError("loaded rules: %s" % sorted(r["name"] for r in rules))
            bad = [(r["name"], r.get("health"), r.get("lastError")) for r in rules
                   if r.get("health") != "ok"]
            if bad:
                raise AssertionError("rules not healthy yet: %s" % bad)
            return True

        harness.wait_until(rules_healthy, PROMETHEUS_WAIT_S, "every rule evaluated", 0.5)

        # A burst of 11 more rejections on slid, after Prometheus has seen its counter at 1
        # (a series' first sample is not an increase): increase(...[5m]) >= 11 > 10.
        def rejections_seen():
            result = self._instant(base, 'dpq_budget_rejections_total{dataset="slid"}')
            return result and float(result[0]["value"][1]) == 1.0

        harness.wait_until(rejections_seen, PROMETHEUS_WAIT_S, "the first rejection scraped", 0.5)
        for _ in range(11):
            refused = dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.5,
                               token=alice, check=False)
            self.assert_error(refused, "RESOURCE_EXHAUSTED")

        def alerts_by_name():
            alerts = _get_json(base + "/api/v1/alerts")["data"]["alerts"]
            found = {}
            for a in alerts:
                found.setdefault(a["labels"]["alertname"], []).append(a)
            return found

        def expected_alerts():
            found = alerts_by_name()
            if "DpqBudgetRejectionBurst" in found and "DpqPopulationBudgetLow" in found:
                return found
            return None

        found = harness.wait_until(expected_alerts, PROMETHEUS_WAIT_S,
                                   "the budget alerts of slid", 0.5)
        # Only slid's epsilon is low (5 % left); its delta (1e-7 of 1e-6 spent) and salaries
        # (5/6 left) are not. The burst alert has no `for`, so it fires at once.
        low = [(a["labels"]["population"], a["labels"]["param"], a["state"])
               for a in found["DpqPopulationBudgetLow"]]
        self.assertEqual(low, [("slid", "epsilon", "pending")], low)
        self.assertAlmostEqual(float(found["DpqPopulationBudgetLow"][0]["value"]), 0.05,
                               delta=1e-9)
        burst = [(a["labels"]["dataset"], a["state"]) for a in found["DpqBudgetRejectionBurst"]]
        self.assertEqual(burst, [("slid", "firing")], burst)
        for name in ("DpqdDown", "DpqLedgerUnreadable", "DpqSlowQueries",
                     "DpqAuditVerifyFailing", "DpqAuditVerifyStale", "DpqTimeBlockBudgetLow"):
            self.assertNotIn(name, found, found.get(name))

        # Every dashboard query returns data from the real series (ALERTS included, as two alerts
        # are active now). $__rate_interval becomes 15 s: 15 samples at the 1 s scrape interval.
        dashboard = load_dashboard()
        for where, expr in dashboard_queries(dashboard):
            result = self._instant(base, expand_grafana(expr, "15s"))
            self.assertTrue(result, "%s returned no series: %s" % (where, expr))

        # dpqd stops: its target goes down and DpqdDown becomes pending (`for: 2m`) for it.
        self.assertEqual(dpqd.stop(), 0)

        def dpqd_down():
            alerts = alerts_by_name().get("DpqdDown", [])
            return [(a["labels"].get("job"), a["labels"].get("instance"), a["state"])
                    for a in alerts]

        down = harness.wait_until(dpqd_down, PROMETHEUS_WAIT_S, "DpqdDown after dpqd stopped", 0.5)
        self.assertEqual(down, [("dpq", "127.0.0.1:%d" % dpqd.metrics_port, "pending")])

    @staticmethod
    def _instant(base, promql):
        url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            document = _get_json(url)
        except urllib.error.HTTPError as e:
            raise AssertionError("query %r: HTTP %d %s" % (promql, e.code,
                                                           e.read().decode(errors="replace")))
        if document.get("status") != "success":
            raise AssertionError("query %r: %s" % (promql, document))
        return document["data"]["result"]

    def _start_prometheus(self, dpqd):
        work = self.make_temp_dir("dpq-e2e-prom-")
        config = os.path.join(work, "prometheus.yml")
        # The repository's alerts.yml itself; scrape and evaluate every second.
        with open(config, "w") as f:
            json.dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                       "rule_files": [ALERTS],
                       "scrape_configs": [{"job_name": "dpq", "static_configs": [
                           {"targets": ["127.0.0.1:%d" % dpqd.metrics_port]}]}]}, f)
        port = harness.free_port()
        base = "http://127.0.0.1:%d" % port
        log_path = os.path.join(work, "prometheus.log")
        log = open(log_path, "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % port],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=harness.child_preexec, cwd=work)
        self.addCleanup(self._stop, proc)

        def ready():
            if proc.poll() is not None:
                with open(log_path, errors="replace") as f:
                    raise AssertionError("prometheus exited (%s):\n%s" %
                                         (proc.returncode, f.read()[-4000:]))
            with urllib.request.urlopen(base + "/-/ready", timeout=2) as r:
                return r.status == 200

        harness.wait_until(ready, PROMETHEUS_WAIT_S, "prometheus /-/ready")
        return base

    @staticmethod
    def _stop(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


if __name__ == "__main__":
    unittest.main(verbosity=2)
