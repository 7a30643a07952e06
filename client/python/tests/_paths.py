"""sys.path for the package's tests: the assembled package in <build>/python ($DPQ_PYTHON_STUBS,
set by ctest; fallback <repo>/build/python) and tests/e2e for harness.py."""
import os
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PACKAGE_DIR = os.environ.get("DPQ_PYTHON_STUBS") or os.path.join(REPO_ROOT, "build", "python")
E2E_DIR = os.path.join(REPO_ROOT, "tests", "e2e")
EXAMPLES_DIR = os.path.join(REPO_ROOT, "client", "python", "examples")

for path in (E2E_DIR, PACKAGE_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)
