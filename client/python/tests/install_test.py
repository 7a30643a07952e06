#!/usr/bin/python3
"""Installs the package as a user would, offline, into a fresh virtual environment on Debian's
python3-grpcio and python3-protobuf, and runs a query through it against a real dpqd:

    python3 -m venv --system-site-packages V
    V/bin/pip install --no-build-isolation --no-index ./client/python

The source is copied (client/python and proto/, same relative layout) so the in-tree build never
writes into the checkout; the installed dpq must be the venv's, with stubs it generated itself.
"""
import json
import os
import shutil
import subprocess
import unittest

import _paths
import harness

PIP_TIMEOUT_S = 300

QUERY_SCRIPT = r"""
import json, os, sys
import dpq
from dpq.v1 import dpq_pb2
client = dpq.Client(os.environ["DPQ_SERVER"], os.environ["DPQ_TOKEN"])
answer = client.query("slid", "count", 0.5)
print(json.dumps({"dpq": dpq.__file__, "stubs": dpq_pb2.__file__, "value": answer.value,
                  "epsilon_spent": answer.budget.epsilon_spent}))
"""


class InstallTest(harness.DpqdTestCase):

    def test_pip_install_into_a_venv_and_query(self):
        root = self.make_temp_dir("dpq-py-install-")
        source = os.path.join(root, "src")
        shutil.copytree(os.path.join(_paths.REPO_ROOT, "client", "python"),
                        os.path.join(source, "client", "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        shutil.copytree(os.path.join(_paths.REPO_ROOT, "proto"), os.path.join(source, "proto"))
        venv = os.path.join(root, "venv")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "DPQ_PROTO_ROOT", "PIP_INDEX_URL")}
        self.run_ok(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], env, root)
        python = os.path.join(venv, "bin", "python")
        self.run_ok([python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                     "--disable-pip-version-check", "./client/python"], env, source)

        dpqd = self.new_dpqd()
        self.create_slid(dpqd)
        dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        token = self.create_analyst(dpqd, "alice")
        dpqd.ctl("grant", "alice", "slid")
        env.update(DPQ_SERVER=dpqd.address, DPQ_TOKEN=token)
        output = self.run_ok([python, "-c", QUERY_SCRIPT], env, root)
        result = json.loads(output.strip().splitlines()[-1])
        site = os.path.realpath(venv)
        self.assertTrue(os.path.realpath(result["dpq"]).startswith(site), result)
        self.assertTrue(os.path.realpath(result["stubs"]).startswith(site), result)
        self.assertAlmostEqual(result["epsilon_spent"], 0.5)
        self.assertEqual(self.snapshot(dpqd, "slid")[0], 0.5)
        # The build left the copied source tree's src/ without generated files.
        self.assertFalse(os.path.exists(os.path.join(source, "client", "python", "src", "dpq",
                                                     "v1")))

    def run_ok(self, argv, env, cwd):
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=PIP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            self.fail("%s: exit %d\nstdout:\n%s\nstderr:\n%s" % (
                " ".join(argv), proc.returncode, proc.stdout.decode(errors="replace"),
                proc.stderr.decode(errors="replace")))
        return proc.stdout.decode()


if __name__ == "__main__":
    unittest.main()
