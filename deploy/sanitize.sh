#!/usr/bin/env bash
# The sanitizer stage of the test suite (deploy/test.sh runs it last):
#   1. builds the unit and db test executables and the fuzz targets with clang under
#      AddressSanitizer + UndefinedBehaviorSanitizer, in a build directory of its own;
#   2. runs `ctest -L unit` and `ctest -L db` there (any sanitizer report aborts the test);
#   3. runs each libFuzzer target (tests/fuzz) for a bounded time on a copy of its seed corpus.
# Exit status non-zero on any failure or finding; the last line is a one-line verdict.
#
# Environment: DPQ_SAN_BUILD_DIR (default build-san), DPQ_FUZZ_SECONDS (per target, default 45;
# 0 skips fuzzing), DPQ_SAN_CTEST_ARGS (extra ctest arguments).
# Packages: clang-14 and libclang-rt-14-dev (deploy/install-deps.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_DIR="${DPQ_SAN_BUILD_DIR:-build-san}"
FUZZ_SECONDS="${DPQ_FUZZ_SECONDS:-45}"
START=$SECONDS

step() { printf '\n== %s\n' "$*"; }

for tool in clang-14 clang++-14; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "sanitize.sh: $tool not found: run deploy/install-deps.sh"
    echo "sanitize.sh: FAIL (no clang)"
    exit 1
  fi
done

# Every report is fatal (the build also passes -fno-sanitize-recover=all); leaks are reported.
# detect_stack_use_after_return costs little at these sizes and catches dangling string_views.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Leaks inside the uninstrumented Debian libraries that dpq cannot free (each entry says why).
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/tests/lsan.supp:print_suppressions=0}"
# ccache keys on paths relative to the checkout, as in deploy/test.sh.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"

# --- 1. configure and build ---------------------------------------------------------------------
step "configure + build ($BUILD_DIR: clang-14, ASan+UBSan, libFuzzer; -j$(nproc))"
t0=$SECONDS
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPQ_SANITIZE=address -DDPQ_FUZZ=ON -DDPQ_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)" --target tests_unit tests_db fuzzers
BUILD_SECONDS=$((SECONDS - t0))

# --- 2. unit and db suites ------------------------------------------------------------------------
step "ctest -L 'unit|db' under ASan+UBSan"
t0=$SECONDS
LOG="$BUILD_DIR/ctest-summary.log"
set +e
# shellcheck disable=SC2086
# The Python package's tests (label python) exercise no C++ and need the package this build
# does not assemble. The scan-totality sweeps and the large audit chain run in the main ctest
# stage only: each is thousands of statements whose work is PostgreSQL's (not sanitized), over
# the same scan builders and store code the other db tests run here; they were a fifth of this
# stage's test time.
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --no-tests=error -L '^(unit|db)$' -LE '^python$' \
  -E '^(scan_totality|JoinedScanTotalityTest\..*|AuditVerifyTest\.VerifyingALargeChainKeepsMemoryFlat)$' \
  ${DPQ_SAN_CTEST_ARGS:-} </dev/null 2>&1 | tee "$LOG"
test_status=${PIPESTATUS[0]}
set -e
TEST_SECONDS=$((SECONDS - t0))
counts="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$LOG" | tail -n 1 || true)"

# --- 3. fuzzing -----------------------------------------------------------------------------------
fuzz_status=0
fuzz_summary=()
t0=$SECONDS
if [ "$FUZZ_SECONDS" -gt 0 ]; then
  step "fuzz: ${FUZZ_SECONDS}s per target"
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  for corpus in tests/fuzz/corpus/*/; do
    name="$(basename "$corpus")"
    bin="$BUILD_DIR/bin/${name}_fuzz"
    # The fuzzer adds what it finds to a copy: the repository's corpus stays the reviewed seeds.
    mkdir -p "$WORK/$name"
    cp "$corpus"* "$WORK/$name/"
    dict=()
    [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
    # -timeout: one input running longer is a hang (a finding); -rss_limit_mb: memory blow-up.
    # A finding is written to $BUILD_DIR/fuzz-findings/ (crash-*, timeout-*, oom-*, leak-*).
    mkdir -p "$BUILD_DIR/fuzz-findings"
    set +e
    "$bin" "${dict[@]}" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$BUILD_DIR/fuzz-findings/${name}-" \
      "$WORK/$name" >"$WORK/$name.log" 2>&1
    rc=$?
    set -e
    execs="$(sed -nE 's/^stat::number_of_executed_units:[[:space:]]*([0-9]+).*/\1/p' "$WORK/$name.log" | tail -n 1)"
    corpus_size="$(find "$WORK/$name" -type f | wc -l)"
    if [ "$rc" -ne 0 ]; then
      fuzz_status=1
      echo "fuzz $name: FINDING (exit $rc); its log:"
      grep -vE '^#[0-9]+' "$WORK/$name.log" | tail -n 60
      fuzz_summary+=("$name FAIL")
    else
      printf 'fuzz %-8s ok: %12s executions in %ss, corpus %d inputs\n' \
        "$name" "${execs:-?}" "$FUZZ_SECONDS" "$corpus_size"
      fuzz_summary+=("$name ${execs:-?} execs")
    fi
  done
fi
FUZZ_SECONDS_SPENT=$((SECONDS - t0))

verdict=PASS
status=0
if [ "$test_status" -ne 0 ] || [ "$fuzz_status" -ne 0 ]; then
  verdict=FAIL
  status=1
fi
summary="$(IFS=,; echo "${fuzz_summary[*]:-not run}")"
echo
echo "sanitize.sh: $verdict — ${counts:-no ctest summary}; fuzz [${summary}]; build ${BUILD_SECONDS}s, tests ${TEST_SECONDS}s, fuzz ${FUZZ_SECONDS_SPENT}s, total $((SECONDS - START))s"
exit "$status"
