#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the whole test suite:
#   sudo bash deploy/test.sh        (as root: bash deploy/test.sh)
# Checks the layering, installs the packages (deploy/install-deps.sh), configures and builds
# everything, then runs every ctest label (unit, stochastic, db, e2e), then `bench/run.sh --quick`
# (every benchmark tool at tiny sizes, about a minute), then the sanitizer stage
# (deploy/sanitize.sh: the unit and db suites under ASan+UBSan in build-san, and each fuzz target
# for a bounded time). The db and e2e tests start their own throwaway PostgreSQL clusters; nothing
# else needs to be running. Exit status non-zero on any failure. .ci/run calls exactly this script.
#
# Environment: DPQ_BUILD_DIR (default build), DPQ_CTEST_ARGS (extra ctest arguments, e.g. "-L unit"),
# DPQ_SANITIZE_STAGE (default 1; 0 skips the sanitizer stage), and sanitize.sh's own variables.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${DPQ_BUILD_DIR:-build}"
START=$SECONDS

step() { printf '\n== %s\n' "$*"; }

# --- 1. layering: only server/store talks to libpqxx; server/dp is pure computation -------------
step "layering check"
sources() {
  find "$@" \( -name 'build*' -o -name .git \) -prune -o -type f \
    \( -name '*.h' -o -name '*.hh' -o -name '*.hpp' -o -name '*.cc' -o -name '*.cpp' -o -name '*.inc' \) -print
}
bad=0
pqxx_outside="$(sources . | grep -v '^\./server/store/' \
  | xargs -r grep -nHE '#[[:space:]]*include[[:space:]]*[<"]pqxx' || true)"
if [ -n "$pqxx_outside" ]; then
  echo "libpqxx included outside server/store/:"
  echo "$pqxx_outside"
  bad=1
fi
if [ -d server/dp ]; then
  # server/training (DP-SGD pricing) is pure too.
  dp_bad="$(sources server/dp server/training | xargs -r grep -nHE \
    '#[[:space:]]*include[[:space:]]*[<"](grpc|grpcpp|grpc\+\+|google/protobuf|pqxx|dpq/v1/)|#[[:space:]]*include[[:space:]]*[<"][^>"]*\.pb\.h' \
    || true)"
  if [ -n "$dp_bad" ]; then
    echo "server/dp or server/training includes gRPC, protobuf or libpqxx headers:"
    echo "$dp_bad"
    bad=1
  fi
fi
# Which server/ folder may include which (README, "Repository layout"): each folder names those
# below it that it uses; anything else is an include that runs upward or sideways. Tests beside a
# unit (*_test.cc, testing/) may reach further and are not checked.
declare -A MAY_INCLUDE=(
  [base]=""
  [dp]="base"
  [query]="base dp"
  [training]="base dp query"
  [sql]="base dp query"
  [store]="base dp query"
  [metrics]="base"
  [collection]="base dp query store"
  [engine]="base dp query sql training store collection"
  [api]="base dp query sql training store collection engine metrics"
  [daemon]="base dp query sql training store collection engine metrics api"
)
for dir in server/*/; do
  from="$(basename "$dir")"
  if [ -z "${MAY_INCLUDE[$from]+set}" ]; then
    echo "server/$from/ is not in deploy/test.sh's layer table: add it with the folders it may use"
    bad=1
    continue
  fi
  while IFS=: read -r file line target; do
    to="$(sed -E 's|.*"server/([a-z_]+)/.*|\1|' <<<"$target")"
    [ "$to" = "$from" ] && continue
    case " ${MAY_INCLUDE[$from]} " in *" $to "*) continue ;; esac
    echo "$file:$line: server/$from/ may not include server/$to/ ($target)"
    bad=1
  done < <(sources "$dir" | grep -vE '_test\.cc$|/testing/' \
             | xargs -r grep -nHE '#[[:space:]]*include[[:space:]]*"server/[a-z_]+/' || true)
done
if [ "$bad" -ne 0 ]; then
  echo "test.sh: FAIL (layering check)"
  exit 1
fi
echo "ok: pqxx only under server/store/, server/dp free of grpc/protobuf/pqxx, no include runs upward"

# --- 2. packages ------------------------------------------------------------------------------
step "packages"
bash "$ROOT/deploy/install-deps.sh"

# --- 2b. layout: every tracked C++ file as .clang-format lays it out -----------------------------
# clang-format 14 (Debian's) decides the layout; a file it would change fails the run, and
# `clang-format -i <file>` fixes it.
step "layout check (.clang-format)"
mapfile -t cxx_files < <(git ls-files '*.cc' '*.h' 2>/dev/null || sources server client tests bench)
if ! clang-format --dry-run -Werror "${cxx_files[@]}"; then
  echo "test.sh: FAIL (layout: run clang-format -i on the files above)"
  exit 1
fi
echo "ok: ${#cxx_files[@]} C++ files laid out as .clang-format says"

# --- 3. configure and build everything ---------------------------------------------------------
# ccache keys on paths relative to the checkout (and ignores the build directory in debug info),
# so a fresh clone in another folder reuses the objects of an earlier build on this machine.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
step "configure + build ($BUILD_DIR, -j$(nproc))"
t0=$SECONDS
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j"$(nproc)"
BUILD_SECONDS=$((SECONDS - t0))

# --- 4. tests ---------------------------------------------------------------------------------
step "ctest (all labels)"
t0=$SECONDS
LOG="$BUILD_DIR/ctest-summary.log"
set +e
# shellcheck disable=SC2086
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --no-tests=error ${DPQ_CTEST_ARGS:-} </dev/null \
  2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
TEST_SECONDS=$((SECONDS - t0))

# --- 4b. benchmarks, tiny sizes (bench/run.sh --quick): the tools must not rot -----------------
# Fails the script when a benchmark tool breaks; a missed performance goal is no failure here
# (the sizes are far too small to measure anything).
step "bench/run.sh --quick"
t0=$SECONDS
set +e
DPQ_BUILD_DIR="$BUILD_DIR" bash "$ROOT/bench/run.sh" --quick </dev/null 2>&1 | tee "$BUILD_DIR/bench-quick.log"
bench_status=${PIPESTATUS[0]}
set -e
BENCH_SECONDS=$((SECONDS - t0))
bench_line="bench --quick ok"
if [ "$bench_status" -ne 0 ]; then
  bench_line="bench --quick FAILED (exit $bench_status; $BUILD_DIR/bench-quick.log)"
  status=1
fi

# --- 5. sanitizers and fuzzing (deploy/sanitize.sh) -----------------------------------------
san_line="sanitizers skipped (DPQ_SANITIZE_STAGE=0)"
SAN_SECONDS=0
if [ "${DPQ_SANITIZE_STAGE:-1}" != 0 ]; then
  step "sanitizer stage (deploy/sanitize.sh)"
  t0=$SECONDS
  SAN_LOG="$BUILD_DIR/sanitize-summary.log"
  set +e
  bash "$ROOT/deploy/sanitize.sh" </dev/null 2>&1 | tee "$SAN_LOG"
  san_status=${PIPESTATUS[0]}
  set -e
  SAN_SECONDS=$((SECONDS - t0))
  san_line="$(grep -E '^sanitize\.sh: ' "$SAN_LOG" | tail -n 1 | sed -E 's/^sanitize\.sh: //; s/; build .*//')"
  [ -n "$san_line" ] || san_line="FAIL — sanitize.sh ended without a summary"
  [ "$san_status" -eq 0 ] || status=1
  san_line="sanitizers ${san_line}"
fi

# One line: verdict, ctest's count line, tests per label, the sanitizer stage, times.
counts="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$LOG" | tail -n 1 || true)"
labels="$(sed -n '/^Label Time Summary:/,/^$/p' "$LOG" \
  | sed -nE 's/^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=.*\(([0-9]+) tests?\).*/\1 \2/p' | paste -sd, - || true)"
verdict=PASS
[ "$status" -eq 0 ] || verdict=FAIL
echo
echo "test.sh: $verdict — ${counts:-no ctest summary} [${labels:-no labels}]; ${bench_line}; ${san_line}; build ${BUILD_SECONDS}s, tests ${TEST_SECONDS}s, bench ${BENCH_SECONDS}s, sanitizers ${SAN_SECONDS}s, total $((SECONDS - START))s"
exit "$status"
