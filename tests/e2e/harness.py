"""Shared harness of the dpq end-to-end tests (stdlib only).

Runs the real binaries: `dpqd` on an embedded PostgreSQL under a private temporary data dir, and
`dpqctl --json` as a subprocess whose single JSON document is parsed and returned.

Binaries and data come from the environment that ctest sets (tests/e2e/CMakeLists.txt):
  DPQD, DPQCTL       paths of the binaries (fallback: <repo>/build/bin/...)
  DPQ_SHARED_DATA    folder of the demo CSVs (fallback: <repo>/deploy/demo-data)

Every process started here is stopped and every temporary directory removed by the owning test's
cleanup (see DpqdTestCase), even when the test fails half-way.
"""

import ctypes
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import sys
import unittest
import urllib.request

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef"
# The declared schema of slid.csv (`dataset create` needs every column's type).
SLID_TYPES = ("person_id=integer", "wages=double", "education=double", "age=integer",
              "sex=text", "language=text")
# ... and of salaries.csv.
SALARIES_TYPES = ("person_id=integer", "rank=text", "discipline=text", "yrs_since_phd=integer",
                  "yrs_service=integer", "sex=text", "salary=integer")
PROMTOOL = "/usr/bin/promtool"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
CTL_TIMEOUT_S = 60.0


def _first_existing(candidates):
    for path in candidates:
        if path and os.path.exists(path):
            return path
    return None


def dpqd_path():
    path = _first_existing([os.environ.get("DPQD"), os.path.join(REPO_ROOT, "build", "bin", "dpqd")])
    if path is None:
        raise unittest.SkipTest("dpqd binary not found (set DPQD)")
    return path


def dpqctl_path():
    path = _first_existing(
        [os.environ.get("DPQCTL"), os.path.join(REPO_ROOT, "build", "bin", "dpqctl")])
    if path is None:
        raise unittest.SkipTest("dpqctl binary not found (set DPQCTL)")
    return path


def data_file(name):
    """Path of a demo CSV: $DPQ_SHARED_DATA first, then the repository's copy. A missing file is a
    failure, not a skip: the repository ships them."""
    for folder in (os.environ.get("DPQ_SHARED_DATA"), os.path.join(REPO_ROOT, "deploy", "demo-data")):
        if folder:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                return path
    raise AssertionError("demo CSV %s not found in deploy/demo-data (or $DPQ_SHARED_DATA)" % name)


_PR_SET_PDEATHSIG = 1


def child_preexec():
    """For long-lived children: a session of their own (so the whole group can be killed), and
    SIGTERM when the test process dies, even by SIGKILL (a ctest timeout), so that nothing
    outlives the test. Linux prctl(PR_SET_PDEATHSIG); best effort elsewhere."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def free_port():
    """A TCP port that was free a moment ago (bound to port 0 by the kernel, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout_s, what, interval_s=0.1):
    """Polls `predicate` until it returns a truthy value; AssertionError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # pylint: disable=broad-except
            last_error = e
        time.sleep(interval_s)
    raise AssertionError("timed out after %.0f s waiting for %s (last error: %r)" %
                         (timeout_s, what, last_error))


class CtlError(AssertionError):
    """dpqctl failed where success was expected."""


class CtlResult(dict):
    """The parsed JSON document of one dpqctl run, plus its exit code and stderr."""

    def __init__(self, document, returncode, stderr, argv):
        super().__init__(document if isinstance(document, dict) else {"_document": document})
        self.returncode = returncode
        self.stderr = stderr
        self.argv = argv

    @property
    def error_code(self):
        err = self.get("error")
        return err.get("code") if isinstance(err, dict) else None

    @property
    def error_message(self):
        err = self.get("error")
        return err.get("message", "") if isinstance(err, dict) else ""


# ---------------------------------------------------------------------------------------------
# Prometheus text format
# ---------------------------------------------------------------------------------------------

_SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_metrics(text):
    """Parses a Prometheus text exposition into a list of (name, {label: value}, float)."""
    samples = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE_RE.match(line)
        if not m:
            continue
        labels = {k: v for k, v in _LABEL_RE.findall(m.group(3) or "")}
        samples.append((m.group(1), labels, float(m.group(4))))
    return samples


def metric_values(samples, name, **labels):
    """Values of every sample called `name` whose labels include `labels`."""
    return [v for (n, l, v) in samples
            if n == name and all(l.get(k) == str(want) for k, want in labels.items())]


# ---------------------------------------------------------------------------------------------
# dpqd
# ---------------------------------------------------------------------------------------------

class Dpqd:
    """One dpqd process on an embedded PostgreSQL in `data_dir`; start/stop/restart keep the dir."""

    def __init__(self, data_dir, log_dir, admin_token=ADMIN_TOKEN, extra_args=()):
        self.extra_args = list(extra_args)  # more dpqd flags, e.g. --database-url
        self.binary = None  # another dpqd executable (e.g. a copy outside the build tree)
        self.cwd = None     # working directory of the process (default: the test's)
        self.listen_host = "127.0.0.1"  # e.g. "0.0.0.0"; clients still connect over 127.0.0.1
        self.ctl_args = []  # global dpqctl options for every ctl() call, e.g. ["--tls-ca", PEM]
        self.data_dir = data_dir
        self.log_dir = log_dir
        self.admin_token = admin_token
        self.proc = None
        self.port = None
        self.metrics_port = None
        self.starts = 0
        self._stderr_path = None
        self._stderr_file = None

    # -- life cycle -----------------------------------------------------------------------

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    @property
    def metrics_url(self):
        return "http://127.0.0.1:%d/metrics" % self.metrics_port

    def log_text(self):
        if self._stderr_path and os.path.exists(self._stderr_path):
            with open(self._stderr_path, "r", errors="replace") as f:
                return f.read()
        return ""

    def start(self, timeout_s=START_TIMEOUT_S):
        """Starts dpqd and waits (polling) until it logs "dpqd listening on" and both ports accept
        connections. Call it from the main thread: the child gets SIGTERM when the thread that
        started it ends (child_preexec)."""
        assert self.proc is None, "dpqd already running"
        # Fresh ports per start: the previous ones may linger in TIME_WAIT or be taken meanwhile.
        self.port, self.metrics_port = free_port(), free_port()
        while self.metrics_port == self.port:
            self.metrics_port = free_port()
        self.starts += 1
        self._stderr_path = os.path.join(self.log_dir, "dpqd-%d.log" % self.starts)
        self._stderr_file = open(self._stderr_path, "wb")
        env = dict(os.environ)
        env["DPQ_ADMIN_TOKEN"] = self.admin_token
        self.proc = subprocess.Popen(
            [self.binary or dpqd_path(), "--data-dir", self.data_dir,
             "--listen", "%s:%d" % (self.listen_host, self.port),
             "--metrics-listen", "127.0.0.1:%d" % self.metrics_port] + self.extra_args,
            stdin=subprocess.DEVNULL, stdout=self._stderr_file, stderr=subprocess.STDOUT,
            env=env, cwd=self.cwd, preexec_fn=child_preexec)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if "dpqd listening on" in self.log_text():
                break
            if self.proc.poll() is not None:
                raise AssertionError("dpqd exited with %s before it was ready; log:\n%s" %
                                     (self.proc.returncode, self.log_text()))
            time.sleep(0.1)
        else:
            log = self.log_text()
            self.kill()
            raise AssertionError("dpqd not ready after %.0f s; log:\n%s" % (timeout_s, log))
        # The log line comes after BuildAndStart; still, make sure both ports accept connections.
        wait_until(lambda: self._port_open(self.port), 10, "dpqd gRPC port")
        wait_until(lambda: self._port_open(self.metrics_port), 10, "dpqd metrics port")

    @staticmethod
    def _port_open(port):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def stop(self, sig=signal.SIGTERM, timeout_s=STOP_TIMEOUT_S):
        """Sends `sig` (SIGTERM or SIGINT) and waits for a clean exit; returns the exit code
        (None after a SIGKILL on timeout)."""
        if self.proc is None:
            return None
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                code = self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                code = None
        else:
            code = self.proc.returncode
        self.proc = None
        self._close_log()
        return code

    def kill(self):
        """Last resort: SIGKILL dpqd's whole process group (dpqd and the postgres it forked)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        self._close_log()
        self._kill_orphan_postgres()

    def _kill_orphan_postgres(self):
        # Postgres runs as an unprivileged user and may have left its own session; its postmaster
        # writes its pid as the first line of postmaster.pid somewhere under our data dir.
        for root, _dirs, files in os.walk(self.data_dir):
            if "postmaster.pid" in files:
                try:
                    with open(os.path.join(root, "postmaster.pid")) as f:
                        pid = int(f.readline().strip())
                    os.kill(pid, signal.SIGQUIT)  # immediate shutdown; postmaster reaps children
                    for _ in range(50):
                        os.kill(pid, 0)
                        time.sleep(0.1)
                    os.kill(pid, signal.SIGKILL)
                except (OSError, ValueError):
                    pass

    def _close_log(self):
        if self._stderr_file is not None:
            self._stderr_file.close()
            self._stderr_file = None

    def restart(self, sig=signal.SIGTERM):
        """Clean stop (exit code 0 and the "dpqd stopped" log line required), then start on the
        same --data-dir."""
        code = self.stop(sig)
        log = self.log_text()
        if code != 0 or "dpqd stopped" not in log:
            raise AssertionError("dpqd did not stop cleanly on signal %d (exit %r); log:\n%s" %
                                 (sig, code, log))
        self.start()

    # -- clients --------------------------------------------------------------------------

    def ctl(self, *args, token=None, check=True, use_admin=True, timeout_s=CTL_TIMEOUT_S):
        """Runs `dpqctl --server ... [--token T] --json ARGS` and returns its parsed document.

        token=None uses the admin token (unless use_admin=False: then no token at all).
        check=True raises CtlError unless the exit code is 0.
        """
        if token is None and use_admin:
            token = self.admin_token
        argv = [dpqctl_path(), "--server", self.address, "--json"] + list(self.ctl_args)
        if token is not None:
            argv += ["--token", token]
        argv += [str(a) for a in args]
        env = {k: v for k, v in os.environ.items() if k not in ("DPQ_TOKEN", "DPQ_SERVER")}
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=timeout_s)
        stdout = proc.stdout.decode("utf-8", errors="replace")
        stderr = proc.stderr.decode("utf-8", errors="replace")
        try:
            document = json.loads(stdout)
        except ValueError:
            raise CtlError("dpqctl %s: exit %d, stdout is not exactly one JSON document:\n%s\n"
                           "stderr:\n%s" % (_shown(args), proc.returncode, stdout, stderr))
        result = CtlResult(document, proc.returncode, stderr, argv)
        if check and proc.returncode != 0:
            raise CtlError("dpqctl %s failed (exit %d): %s\nstderr: %s" %
                           (_shown(args), proc.returncode, stdout.strip(), stderr.strip()))
        return result

    def ctl_text(self, *args, token=None, timeout_s=CTL_TIMEOUT_S):
        """Runs dpqctl without --json (as a person would) and returns its stdout; raises CtlError
        unless it exits 0. token=None uses the admin token."""
        argv = [dpqctl_path(), "--server", self.address, "--token", token or self.admin_token]
        argv += list(self.ctl_args)
        argv += [str(a) for a in args]
        env = {k: v for k, v in os.environ.items() if k not in ("DPQ_TOKEN", "DPQ_SERVER")}
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, env=env,
                              timeout=timeout_s)
        stdout = proc.stdout.decode("utf-8", errors="replace")
        if proc.returncode != 0:
            raise CtlError("dpqctl %s failed (exit %d): %s\nstderr: %s" %
                           (_shown(args), proc.returncode, stdout.strip(),
                            proc.stderr.decode("utf-8", errors="replace").strip()))
        return stdout

    def scrape(self):
        """Raw /metrics text."""
        with urllib.request.urlopen(self.metrics_url, timeout=10) as response:
            return response.read().decode("utf-8")

    def debits_seen(self):
        """Ledger debits this dpqd has finished (dpq_debit_duration_seconds_count), to wait for a
        query in flight to have been charged before its scans end."""
        return sum(metric_values(self.metrics(), "dpq_debit_duration_seconds_count"))

    def wait_for_debits(self, more_than, what="a debit"):
        """Polls (every 10 ms, at most 60 s) until more than `more_than` debits have finished."""
        wait_until(lambda: self.debits_seen() > more_than, 60, what, interval_s=0.01)

    def metrics(self):
        return parse_metrics(self.scrape())


def _shown(args):
    return " ".join(str(a) for a in args)


def _make_temp_dir(add_cleanup, prefix="dpq-e2e-"):
    path = tempfile.mkdtemp(prefix=prefix)
    # Embedded Postgres runs as an unprivileged user when we are root: it must traverse the
    # parents of its data dir.
    os.chmod(path, 0o755)
    add_cleanup(shutil.rmtree, path, True)
    return path


def _stop_dpqd(dpqd):
    try:
        dpqd.stop()
    finally:
        dpqd.kill()


def _new_dpqd(add_cleanup, start):
    root = _make_temp_dir(add_cleanup)
    data_dir = os.path.join(root, "data")
    log_dir = os.path.join(root, "logs")
    os.makedirs(log_dir)
    dpqd = Dpqd(data_dir, log_dir)
    # Registered after the temp dir, so it runs first (cleanups are LIFO).
    add_cleanup(_stop_dpqd, dpqd)
    if start:
        dpqd.start()
    return dpqd


# The dpq Python package with its generated dpq.v1 stubs (target dpq_python_stubs assembles it in
# <build>/python) and client/python (dpq_client.py), for tests that speak gRPC directly. ctest
# passes the package's folder in $DPQ_PYTHON_STUBS.
STUBS_DIR = os.environ.get("DPQ_PYTHON_STUBS") or os.path.join(REPO_ROOT, "build", "python")
sys.path.insert(0, STUBS_DIR)
sys.path.insert(0, os.path.join(REPO_ROOT, "client", "python"))


def require_grpc_stubs():
    """Imports grpc and the dpq.v1 stubs. Missing modules fail the test when ctest promised them
    ($DPQ_PYTHON_STUBS set) and skip it otherwise (a run by hand without a build)."""
    try:
        import grpc  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError as e:
        message = "gRPC Python stubs unavailable (%s; looked up in %s)" % (e, STUBS_DIR)
        if os.environ.get("DPQ_PYTHON_STUBS"):
            raise AssertionError(message)
        raise unittest.SkipTest(message)


# The generated modules of dpq.v1, one per .proto file (dpq.proto first).
PROTO_MODULES = ("dpq_pb2", "collection_pb2", "training_pb2")


def proto_modules():
    """The imported dpq.v1 *_pb2 modules of PROTO_MODULES."""
    import importlib  # pylint: disable=import-outside-toplevel
    return [importlib.import_module("dpq.v1." + name) for name in PROTO_MODULES]


def proto_module_of(service):
    """The dpq.v1 *_pb2 module that defines `service` (e.g. "AdminService")."""
    for module in proto_modules():
        if service in module.DESCRIPTOR.services_by_name:
            return module
    raise KeyError("no dpq.v1 service named %s" % service)


def grpc_call(channel, service, method, request, token=None, metadata=None, timeout=60.0):
    """Calls dpq.v1.`service`/`method` on `channel` by its path, from the proto descriptors:
    `request` is a message, or for a client-streaming method an iterable of messages; `bytes`
    (or an iterable of bytes) go on the wire as they are, so a test can send what the Python
    protobuf refuses to build (bad UTF-8 in a string field, wrong wire types). Sends
    `authorization: Bearer <token>` unless `metadata` is given. Returns (code name, details):
    ("OK", response) on success."""
    import grpc  # pylint: disable=import-outside-toplevel
    module = proto_module_of(service)
    service_descriptor = module.DESCRIPTOR.services_by_name[service]
    descriptor = service_descriptor.methods_by_name[method]
    path = "/%s/%s" % (service_descriptor.full_name, method)
    first = request
    if descriptor.client_streaming:
        request = list(request)
        first = request[0] if request else None
    raw = isinstance(first, (bytes, bytearray))
    request_serializer = None if raw else (lambda m: m.SerializeToString())
    response_cls = getattr(module, descriptor.output_type.name)
    make = channel.stream_unary if descriptor.client_streaming else channel.unary_unary
    rpc = make(path, request_serializer=request_serializer,
               response_deserializer=response_cls.FromString)
    if metadata is None:
        metadata = (("authorization", "Bearer " + token),) if token is not None else ()
    try:
        response = rpc(iter(request) if descriptor.client_streaming else request,
                       metadata=metadata, timeout=timeout)
    except grpc.RpcError as e:
        return e.code().name, e.details() or ""
    return "OK", response


class DpqdTestCase(unittest.TestCase):
    """Base class: new_dpqd() / new_class_dpqd() give a started dpqd in a temp dir that is stopped
    and removed afterwards (per test, or once per class), whatever happens in between."""

    def make_temp_dir(self, prefix="dpq-e2e-"):
        return _make_temp_dir(self.addCleanup, prefix)

    def new_dpqd(self, start=True):
        return _new_dpqd(self.addCleanup, start)

    @classmethod
    def new_class_dpqd(cls, start=True):
        return _new_dpqd(cls.addClassCleanup, start)

    @classmethod
    def make_class_temp_dir(cls, prefix="dpq-e2e-"):
        return _make_temp_dir(cls.addClassCleanup, prefix)

    # -- common fixtures ------------------------------------------------------------------

    @staticmethod
    def create_slid(dpqd, name="slid", bounds=("wages=0:100", "age=0:120", "education=0:25"),
                    extra=()):
        args = ["dataset", "create", name, "--csv", data_file("slid.csv"),
                "--privacy-unit", "person_id", *extra]
        for t in SLID_TYPES:
            args += ["--type", t]
        for b in bounds:
            args += ["--bounds", b]
        return dpqd.ctl(*args)

    @staticmethod
    def create_salaries(dpqd, name="salaries"):
        args = ["dataset", "create", name, "--csv", data_file("salaries.csv"),
                "--privacy-unit", "person_id", "--bounds", "salary=0:300000"]
        for t in SALARIES_TYPES:
            args += ["--type", t]
        return dpqd.ctl(*args)

    @staticmethod
    def create_recent_visits(dpqd, name="visits", width="day", epsilon=1, delta=1e-6):
        """A dataset `name` (its own population) with a budget per time block of `width`: columns
        pid, day (date, declared from 60 days before the real UTC today to a year after it), one
        row a day, each its own person, over the last 14 days. Each block's budget is `epsilon`
        and `delta`. Returns today (datetime.date, UTC) as the server sees it at creation."""
        import datetime
        today = datetime.datetime.now(datetime.timezone.utc).date()
        fd, path = tempfile.mkstemp(prefix="dpq-e2e-visits-", suffix=".csv")
        try:
            with os.fdopen(fd, "w") as f:
                f.write("pid,day\n")
                for k in range(14):
                    f.write("%d,%s\n" % (k + 1, today - datetime.timedelta(days=k)))
            dpqd.ctl("dataset", "create", name, "--csv", path, "--privacy-unit", "pid",
                     "--type", "pid=integer", "--type", "day=date", "--bounds",
                     "day=%s:%s" % (today - datetime.timedelta(days=60),
                                    today + datetime.timedelta(days=365)),
                     "--block-by", "day", "--block-width", width)
        finally:
            os.remove(path)
        dpqd.ctl("budget", "set", name, "--epsilon", epsilon, "--delta", delta, "--per-block")
        return today

    def assert_promtool_accepts(self, exposition):
        """`promtool check metrics` accepts the exposition text (a scrape of /metrics)."""
        check = subprocess.run([PROMTOOL, "check", "metrics"], input=exposition.encode("utf-8"),
                               capture_output=True, timeout=60)
        self.assertEqual(check.returncode, 0,
                         "promtool check metrics exit %d:\n%s%s" %
                         (check.returncode, check.stdout.decode(errors="replace"),
                          check.stderr.decode(errors="replace")))

    @staticmethod
    def create_analyst(dpqd, name):
        result = dpqd.ctl("analyst", "create", name)
        token = result.get("token")
        if not token:
            raise CtlError("analyst create printed no token: %r" % dict(result))
        return token

    @staticmethod
    def snapshot(dpqd, dataset):
        """(epsilon_spent, delta_spent, number of audit entries) of `dataset`, read as admin."""
        budget = dpqd.ctl("budget", "show", dataset)
        audit = dpqd.ctl("audit", dataset)
        return (budget["epsilon_spent"], budget["delta_spent"], len(audit["entries"]))

    def assert_error(self, result, code, message_contains=None):
        self.assertNotEqual(result.returncode, 0,
                            "expected %s, but dpqctl succeeded: %r" % (code, dict(result)))
        self.assertEqual(result.error_code, code,
                         "expected %s, got %r (exit %d, stderr %s)" %
                         (code, dict(result), result.returncode, result.stderr.strip()))
        if message_contains is not None:
            for word in ([message_contains] if isinstance(message_contains, str)
                         else message_contains):
                self.assertIn(word.lower(), result.error_message.lower(),
                              "message of %s should name %r: %r" % (code, word, result.error_message))

    def assert_close(self, a, b, tol=1e-12, msg=None):
        self.assertTrue(math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tol,
                        msg or "%r != %r (tolerance %g)" % (a, b, tol))
