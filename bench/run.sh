#!/usr/bin/env bash
# Every end-to-end benchmark scenario with its baseline, side by side, in one command:
#   bench/run.sh            full sizes (1M and 10M rows, 1..64 clients, 100k history; about 20 min on a quiet 2-core VM),
#                           results in bench/results/<date>-<host>.json plus SVG plots
#   bench/run.sh --quick    tiny sizes (well under 2 minutes): checks that every tool still works;
#                           results go to <build>/bench-results/, and a missed goal is no failure
# Other arguments go to bench/run_bench.py (e.g. --p1-rows 1000000, --skip-p1, --out-dir DIR).
# Environment: DPQ_BUILD_DIR (default build): dpqd, dpqctl and dpq-bench are built there first.
# Exit status: non-zero when a tool fails; 3 when a full run missed a goal (see bench/README.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${DPQ_BUILD_DIR:-build}"

quick=0
for arg in "$@"; do
  [ "$arg" = --quick ] && quick=1
done
out_dir="$ROOT/bench/results"
[ "$quick" -eq 1 ] && out_dir="$BUILD_DIR/bench-results"

for tool in /usr/lib/postgresql/15/bin/pgbench /usr/lib/postgresql/15/bin/psql; do
  [ -x "$tool" ] || { echo "run.sh: $tool missing (deploy/install-deps.sh installs it)" >&2; exit 1; }
done
if [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target dpqd dpqctl dpq_bench -j"$(nproc)" >/dev/null

exec python3 "$ROOT/bench/run_bench.py" --bin-dir "$BUILD_DIR/bin" --out-dir "$out_dir" "$@"
