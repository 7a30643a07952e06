#!/usr/bin/python3
"""Packaging: the Dockerfile, docker-compose.yml and deploy/k8s/ agree with dpqd.

No container engine or cluster runs here, so this checks what can be checked without one:
- every YAML file parses (python3-yaml), and every file the Dockerfile copies exists;
- every dpqd flag the entrypoint, compose and the Kubernetes manifests pass is one `dpqd --help`
  lists (except PENDING_SERVER_FLAGS, asserted to be exactly the missing ones);
- the gRPC and metrics ports agree everywhere: the flags' defaults, the entrypoint, EXPOSE, the
  HEALTHCHECK, compose, prometheus.yml, the Deployment's ports, probes and scrape annotations, the
  Service;
- the Dockerfile's build stage runs deploy/install-deps.sh exactly as CI does and its runtime
  stage installs `--runtime` only; that runtime list owns (dpkg -S) every library the built dpqd
  and dpqctl link directly, and names no package they do not link;
- the HEALTHCHECK command itself, against a live dpqd: SERVING and exit 0, then NOT_SERVING and
  exit 1 once its database stops.
docker-compose's Grafana and Prometheus provisioning is checked by observability_config_test.py.
"""

import os
import re
import shlex
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import yaml  # python3-yaml (deploy/install-deps.sh)

REPO = harness.REPO_ROOT
DOCKERFILE = os.path.join(REPO, "Dockerfile")
COMPOSE = os.path.join(REPO, "docker-compose.yml")
ENTRYPOINT = os.path.join(REPO, "deploy", "docker-entrypoint.sh")
INSTALL_DEPS = os.path.join(REPO, "deploy", "install-deps.sh")
CI_TEST = os.path.join(REPO, "deploy", "test.sh")
PROM_CONFIG = os.path.join(REPO, "deploy", "prometheus", "prometheus.yml")
K8S_DIR = os.path.join(REPO, "deploy", "k8s")
PG_CTL = "/usr/lib/postgresql/15/bin/pg_ctl"

# Flags the manifests may use before dpqd lists them (none now: --log-format and --check-config
# have arrived since). The test fails when one of these appears in --help: remove it then.
PENDING_SERVER_FLAGS = set()
# Packages of the runtime list that own no linked library, and why they are there.
RUNTIME_TOOLS = {"postgresql-15", "tini", "ca-certificates"}
COMPILERS = {"build-essential", "cmake", "ninja-build", "g++", "gcc", "ccache", "git"}


def dpqd_help():
    """({flag: default}, the whole text) of `dpqd --help`."""
    out = subprocess.run([harness.dpqd_path(), "--help"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    flags = {}
    for m in re.finditer(r"^  --([a-z0-9-]+)\n(?:      .*\n)*?      default: (.*)$", out, re.M):
        flags[m.group(1)] = m.group(2)
    if "listen" not in flags:
        raise AssertionError("cannot read the flags of dpqd --help:\n" + out)
    return flags, out


def flag_name(arg):
    """'--db_pool_size=8' -> 'db-pool-size' (dpqd accepts both spellings)."""
    return arg[2:].split("=", 1)[0].replace("_", "-")


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def entrypoint_args():
    """The dpqd arguments the entrypoint always passes, from its `args=(...)` line."""
    with open(ENTRYPOINT) as f:
        text = f.read()
    m = re.search(r"^args=\((.*)\)$", text, re.M)
    args = shlex.split(m.group(1))
    extra = re.findall(r"args\+=\(([^)]*)\)", text)
    return args, [shlex.split(e)[0] for e in extra], text


def dockerfile_stages():
    """[(FROM line, [(instruction, rest), ...]), ...], continuation lines joined."""
    with open(DOCKERFILE) as f:
        text = re.sub(r"\\\n", " ", f.read())
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction == "FROM":
            stages.append((rest, []))
        else:
            stages[-1][1].append((instruction, rest.strip()))
    return stages


def k8s_documents():
    docs = []
    for name in sorted(os.listdir(K8S_DIR)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(K8S_DIR, name)) as f:
                docs += [(name, d) for d in yaml.safe_load_all(f) if d]
    return docs


def needed_libraries(binary):
    """{soname: path} of the DT_NEEDED libraries of `binary`, resolved by ldd."""
    dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                             check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", dynamic)
    resolved = {}
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m:
            resolved[m.group(1)] = m.group(2)
    return {so: resolved.get(so) for so in needed}


def owning_packages(paths):
    """{path: package} from one `dpkg -S` (each call reads the whole file database). Debian 12
    merges /lib into /usr/lib: dpkg knows a file under one of its names."""
    names = {}
    for path in paths:
        for candidate in (path, os.path.realpath(path), re.sub(r"^/usr", "", path),
                          re.sub(r"^/usr", "", os.path.realpath(path))):
            names.setdefault(candidate, path)
    proc = subprocess.run(["dpkg", "-S"] + sorted(names), capture_output=True, text=True)
    owners = {}
    for line in proc.stdout.splitlines():
        package, _, owned = line.partition(": ")
        if owned in names:
            owners.setdefault(names[owned], package.split(":")[0].split(",")[0].strip())
    return owners


class StaticPackagingTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.help, cls.help_text = dpqd_help()
        cls.grpc_port = port_of(cls.help["listen"])
        cls.metrics_port = port_of(cls.help["metrics-listen"])
        cls.entry_args, cls.entry_optional, cls.entry_text = entrypoint_args()
        with open(COMPOSE) as f:
            cls.compose = yaml.safe_load(f)
        cls.k8s = k8s_documents()
        cls.stages = dockerfile_stages()

    def assert_flags_known(self, args, where):
        used = {flag_name(a) for a in args if a.startswith("--")}
        unknown = used - set(self.help) - PENDING_SERVER_FLAGS
        self.assertEqual(unknown, set(), "%s passes flags dpqd --help does not list" % where)
        return used

    def k8s_kind(self, kind):
        found = [d for (_n, d) in self.k8s if d.get("kind") == kind]
        self.assertEqual(len(found), 1, "deploy/k8s must hold exactly one %s" % kind)
        return found[0]

    # --- the entrypoint and the flags ---------------------------------------------------------

    def test_entrypoint_flags_and_ports_match_dpqd_help(self):
        self.assert_flags_known(self.entry_args + self.entry_optional, "docker-entrypoint.sh")
        args = dict(zip(self.entry_args[::2], self.entry_args[1::2]))
        self.assertEqual(port_of(args["--listen"]), self.grpc_port)
        self.assertEqual(port_of(args["--metrics-listen"]), self.metrics_port)
        self.assertIn('exec /usr/local/bin/dpqd "${args[@]}" "$@"', self.entry_text)

    def test_manifest_flags_are_dpqd_flags(self):
        used = set()
        for service in self.compose["services"].values():
            if service.get("image", "").startswith("dpq:"):
                command = service.get("command") or []
                used |= self.assert_flags_known(command, "docker-compose.yml")
        for spec in self.pod_containers():
            used |= self.assert_flags_known(spec.get("args", []) + spec.get("command", []),
                                            "deploy/k8s container %s" % spec["name"])
        used |= {flag_name(a) for a in self.entry_args + self.entry_optional if a.startswith("--")}
        missing = used - set(self.help)
        # Exactly the pending flags are missing: once dpqd lists one, shrink PENDING_SERVER_FLAGS.
        self.assertEqual(missing, PENDING_SERVER_FLAGS,
                         "flags the manifests use but dpqd --help does not list")

    # --- Dockerfile ---------------------------------------------------------------------------

    def test_dockerfile_build_stage_runs_the_ci_install_script(self):
        self.assertGreaterEqual(len(self.stages), 2, "the Dockerfile must be multi-stage")
        build_from, build = self.stages[0]
        self.assertRegex(build_from, r"^debian:bookworm AS build$")
        with open(CI_TEST) as f:
            ci = re.findall(r'^bash "\$ROOT/deploy/install-deps.sh"(.*)$', f.read(), re.M)
        self.assertEqual(len(ci), 1, "deploy/test.sh runs install-deps.sh once")
        copies = [rest for (ins, rest) in build if ins == "COPY"]
        self.assertIn("deploy/install-deps.sh /tmp/install-deps.sh", copies)
        runs = [rest for (ins, rest) in build if ins == "RUN" and "install-deps.sh" in rest]
        self.assertEqual(len(runs), 1)
        invocation = re.search(r"bash /tmp/install-deps.sh([^&;]*)", runs[0]).group(1).strip()
        self.assertEqual(invocation, ci[0].strip(), "the image and CI install different packages")

    def test_dockerfile_runtime_stage_is_slim_non_root_with_grpc_healthcheck(self):
        runtime_from, runtime = self.stages[-1]
        self.assertRegex(runtime_from, r"^debian:bookworm-slim( AS \w+)?$")
        runs = " ".join(rest for (ins, rest) in runtime if ins == "RUN")
        self.assertIn("bash /tmp/install-deps.sh --runtime", runs)
        user = [rest for (ins, rest) in runtime if ins == "USER"]
        self.assertEqual(user, ["dpq"])
        uid = re.search(r"useradd [^&]*--uid (\d+)[^&]* dpq\b", runs)
        self.assertIsNotNone(uid, "the user dpq needs a fixed uid (Kubernetes runAsUser)")
        self.__class__.dockerfile_uid = int(uid.group(1))
        self.assertNotEqual(int(uid.group(1)), 0)
        exposed = {int(p) for (ins, rest) in runtime if ins == "EXPOSE" for p in rest.split()}
        self.assertEqual(exposed, {self.grpc_port, self.metrics_port})
        health = [rest for (ins, rest) in runtime if ins == "HEALTHCHECK"]
        self.assertEqual(len(health), 1)
        argv = yaml.safe_load(re.search(r"CMD (\[.*\])", health[0]).group(1))  # a JSON array
        self.assertEqual(argv[0], "/usr/local/bin/dpqctl")
        self.assertEqual(argv[-1], "health")
        self.assertEqual(port_of(argv[argv.index("--server") + 1]), self.grpc_port)
        self.__class__.healthcheck_argv = argv
        entry = yaml.safe_load([rest for (ins, rest) in runtime if ins == "ENTRYPOINT"][0])
        self.assertEqual(entry, ["/usr/bin/tini", "--", "/usr/local/bin/dpq-entrypoint"])
        # Every binary the runtime stage runs is copied in (or comes from a runtime package).
        copied = " ".join(rest for (ins, rest) in runtime if ins == "COPY")
        for path in ("/usr/local/bin/dpqd", "/usr/local/bin/dpqctl", "/usr/local/bin/dpq-entrypoint"):
            self.assertIn(os.path.dirname(path) + "/", copied + " ")

    def test_every_file_the_dockerfile_and_compose_copy_exists(self):
        for _from, instructions in self.stages:
            for ins, rest in instructions:
                if ins == "COPY" and not rest.startswith("--from"):
                    for source in rest.split()[:-1]:
                        self.assertTrue(os.path.exists(os.path.join(REPO, source)), source)
        build = self.compose["services"]["dpqd"]["build"]
        self.assertTrue(os.path.isfile(os.path.join(REPO, build["context"], "Dockerfile")))
        targets = [f.split(" AS ")[1] for (f, _i) in self.stages if " AS " in f]
        self.assertEqual(build["target"], targets[-1])

    # --- the runtime packages against the built binaries --------------------------------------

    def test_runtime_packages_provide_exactly_the_linked_libraries(self):
        listed = subprocess.run(["bash", INSTALL_DEPS, "--runtime", "--list"], capture_output=True,
                                text=True, check=True).stdout.split()
        self.assertLessEqual(RUNTIME_TOOLS, set(listed))
        self.assertEqual(set(listed) & COMPILERS, set(), "a compiler in the runtime list")
        libraries = {}
        for binary in (harness.dpqd_path(), harness.dpqctl_path()):
            for soname, path in needed_libraries(binary).items():
                self.assertIsNotNone(path, "%s: %s not found by ldd" % (binary, soname))
                libraries[path] = soname
        tools = ["/usr/lib/postgresql/15/bin/" + t for t in ("initdb", "pg_ctl", "postgres")]
        package_of = owning_packages(list(libraries) + tools)
        owners = {}
        for path, soname in libraries.items():
            self.assertIn(path, package_of, "no package owns %s" % path)
            owners.setdefault(package_of[path], set()).add(soname)
        missing = set(owners) - set(listed)
        self.assertEqual(missing, set(), "install-deps.sh --runtime lacks the packages of %s" %
                         {p: sorted(owners[p]) for p in missing})
        unused = set(listed) - set(owners) - RUNTIME_TOOLS
        self.assertEqual(unused, set(), "runtime packages no binary links")
        # The embedded database's binaries come from the listed PostgreSQL package.
        for tool in tools:
            self.assertEqual(package_of.get(tool), "postgresql-15", tool)
        sys.stderr.write("\nruntime packages: %d (%d for %d linked libraries)\n" %
                         (len(listed), len(owners), sum(len(s) for s in owners.values())))

    # --- docker-compose -----------------------------------------------------------------------

    def test_compose_ports_environment_and_scrape_target(self):
        services = self.compose["services"]
        dpqd = services["dpqd"]
        container_ports = {int(p.rsplit(":", 1)[1]) for p in dpqd["ports"]}
        self.assertEqual(container_ports, {self.grpc_port, self.metrics_port})
        for variable in dpqd["environment"]:
            # Read by the entrypoint, or by dpqd itself (its --help names that environment).
            self.assertTrue(re.search(r"\$\{?%s\b" % variable, self.entry_text) or
                            re.search(r"Environment: %s\b" % variable, self.help_text),
                            "neither the entrypoint nor dpqd reads %s" % variable)
        for service in services.values():
            for dependency in service.get("depends_on", {}):
                self.assertIn(dependency, services)
        self.assertEqual(services["postgres"]["image"], "postgres:15")
        with open(PROM_CONFIG) as f:
            prom = yaml.safe_load(f)
        targets = [t for job in prom["scrape_configs"] for sc in job["static_configs"]
                   for t in sc["targets"]]
        self.assertEqual(targets, ["dpqd:%d" % self.metrics_port])

    # --- Kubernetes ---------------------------------------------------------------------------

    def pod_spec(self):
        return self.k8s_kind("Deployment")["spec"]["template"]["spec"]

    def pod_containers(self):
        spec = self.pod_spec()
        return spec.get("initContainers", []) + spec["containers"]

    def test_k8s_deployment_ports_probes_and_scrape_annotations(self):
        deployment = self.k8s_kind("Deployment")
        self.assertEqual(deployment["spec"]["replicas"], 2)
        template = deployment["spec"]["template"]
        self.assertEqual(deployment["spec"]["selector"]["matchLabels"].items() -
                         template["metadata"]["labels"].items(), set())
        (dpqd,) = template["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in dpqd["ports"]}
        self.assertEqual(ports, {"grpc": self.grpc_port, "metrics": self.metrics_port})
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            self.assertEqual(dpqd[probe]["grpc"]["port"], self.grpc_port, probe)
        annotations = template["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/scrape"], "true")
        self.assertEqual(int(annotations["prometheus.io/port"]), self.metrics_port)
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")
        for container in self.pod_containers():
            self.assertEqual(container["image"], self.compose["services"]["dpqd"]["image"])
        security = template["spec"]["securityContext"]
        self.assertTrue(security["runAsNonRoot"])
        if not hasattr(self, "dockerfile_uid"):
            self.test_dockerfile_runtime_stage_is_slim_non_root_with_grpc_healthcheck()
        self.assertEqual(security["runAsUser"], self.dockerfile_uid)

    def test_k8s_service_selects_the_pods_and_targets_their_ports(self):
        service = self.k8s_kind("Service")
        template = self.k8s_kind("Deployment")["spec"]["template"]
        self.assertEqual(service["spec"]["selector"].items() - template["metadata"]["labels"].items(),
                         set())
        (dpqd,) = template["spec"]["containers"]
        by_name = {p["name"]: p["containerPort"] for p in dpqd["ports"]}
        for port in service["spec"]["ports"]:
            target = port["targetPort"]
            target = by_name[target] if isinstance(target, str) else target
            self.assertEqual(port["port"], target, "Service port %s" % port["name"])
        self.assertEqual({p["port"] for p in service["spec"]["ports"]},
                         {self.grpc_port, self.metrics_port})

    def test_k8s_references_resolve(self):
        config = self.k8s_kind("ConfigMap")
        secret = self.k8s_kind("Secret")
        secret_keys = set(secret.get("stringData", {})) | set(secret.get("data", {}))
        self.assertEqual(secret_keys, {"admin-token", "database-url"})
        spec = self.pod_spec()
        for volume in spec["volumes"]:
            if "secret" in volume:
                self.assertEqual(volume["secret"]["secretName"], secret["metadata"]["name"])
                for item in volume["secret"].get("items", []):
                    self.assertIn(item["key"], secret_keys)
        mounts = {v["name"] for v in spec["volumes"]}
        for container in self.pod_containers():
            env = set()
            for source in container.get("envFrom", []):
                self.assertEqual(source["configMapRef"]["name"], config["metadata"]["name"])
                env |= set(config["data"])
            for variable in container.get("env", []):
                env.add(variable["name"])
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    self.assertEqual(ref["name"], secret["metadata"]["name"])
                    self.assertIn(ref["key"], secret_keys)
                # Every variable given to the container is one the entrypoint reads.
                self.assertIn(variable["name"], self.entry_text)
            self.assertIn("DPQ_REQUIRE_DATABASE_URL", env)
            self.assertIn("DPQ_REQUIRE_DATABASE_URL", self.entry_text)
            for arg in container.get("args", []):
                for variable in re.findall(r"\$\(([A-Z0-9_]+)\)", arg):
                    self.assertIn(variable, env, "%s: $(%s) is not defined" % (arg, variable))
            for mount in container.get("volumeMounts", []):
                self.assertIn(mount["name"], mounts)
            token_file = [v["value"] for v in container["env"] if v["name"] == "DPQ_ADMIN_TOKEN_FILE"]
            secret_mount = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == "secrets"]
            self.assertEqual(token_file, [secret_mount[0] + "/admin-token"])


class HealthcheckCommandTest(harness.DpqdTestCase):
    """The Dockerfile's HEALTHCHECK command, run as written against a live dpqd (its port
    changed to the test's)."""

    def test_healthcheck_follows_the_database(self):
        StaticPackagingTest.setUpClass()
        case = StaticPackagingTest("test_dockerfile_runtime_stage_is_slim_non_root_with_grpc_healthcheck")
        case.test_dockerfile_runtime_stage_is_slim_non_root_with_grpc_healthcheck()
        argv = list(StaticPackagingTest.healthcheck_argv)
        argv[0] = harness.dpqctl_path()
        dpqd = harness.Dpqd(os.path.join(self.make_temp_dir(), "data"), self.make_temp_dir(),
                            extra_args=["--health-check-seconds=0.2"])
        self.addCleanup(lambda: (dpqd.stop(), dpqd.kill()))
        dpqd.start()
        argv[argv.index("--server") + 1] = dpqd.address

        def run():
            return subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)

        healthy = run()
        self.assertEqual((healthy.returncode, healthy.stdout), (0, "SERVING\n"), healthy.stderr)
        pg = [PG_CTL, "-D", os.path.join(dpqd.data_dir, "pg"), "-w", "-t", "60", "-m", "fast",
              "stop"]
        if os.geteuid() == 0:  # the embedded cluster runs as postgres when dpqd runs as root
            pg = ["runuser", "-u", "postgres", "--"] + pg
        subprocess.run(pg, check=True, capture_output=True, timeout=90, stdin=subprocess.DEVNULL)

        def unhealthy():
            result = run()
            return result if result.returncode != 0 else None

        result = harness.wait_until(unhealthy, 30, "the HEALTHCHECK to fail", 0.2)
        self.assertEqual((result.returncode, result.stdout), (1, "NOT_SERVING\n"), result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
