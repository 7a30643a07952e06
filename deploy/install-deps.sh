#!/usr/bin/env bash
# Installs every Debian 12 package dpq needs to build, test and run.
# Idempotent and non-interactive; the README, .ci/run and the Dockerfile all call this one script.
#   install-deps.sh             everything: build, test and run (CI, the Dockerfile's build stage)
#   install-deps.sh --runtime   only what the built dpqd and dpqctl need to run (the Docker runtime
#                               stage): shared libraries and the PostgreSQL 15 server, no compiler
#   add --list to print the chosen packages, one a line, instead of installing them
# tests/e2e/packaging_test.py checks RUNTIME_LIBRARIES against `ldd` of the built binaries
# (dpkg -S), both ways, so that the runtime list cannot rot.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache git
  clang-format  # deploy/test.sh checks the C++ layout against .clang-format
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libpqxx-dev libabsl-dev prometheus-cpp-dev libcivetweb-dev libssl-dev libcli11-dev nlohmann-json3-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-grpcio python3-yaml curl jq
  # the Python client package (client/python): its runtime, an offline venv install, and what its
  # examples and to_pandas() use
  python3-protobuf python3-venv python3-pip python3-setuptools python3-wheel
  python3-pandas python3-numpy python3-matplotlib
  gnuplot-nox  # bench/run.sh draws its plots (SVG) with it; pgbench comes with postgresql-15
  openssl  # the TLS test makes its certificates
  # the sanitizer and fuzzing stage (deploy/sanitize.sh): clang and its runtimes (ASan, UBSan, TSan,
  # libFuzzer), which --no-install-recommends would otherwise leave out
  clang-14 libclang-rt-14-dev
  # runtime: the embedded database and a Prometheus server for the scrape test
  postgresql-15 postgresql-contrib prometheus
  chromium  # the status-page test loads the page headless
  pgbouncer  # the connection-pooler db test runs dpq's store through it
)

# The packages owning every shared library dpqd and dpqctl link directly (their own dependencies
# follow through apt; libpq5 too: dpqd parses shard URLs with libpq's PQconninfoParse).
RUNTIME_LIBRARIES=(
  libabsl20220623 libgrpc++1.51 libgrpc29 libprotobuf32 libpqxx-6.4 libpq5
  libprometheus-cpp-core1.0 libcivetweb1 libssl3 libstdc++6 libgcc-s1
  libc6
)
RUNTIME_TOOLS=(
  postgresql-15    # initdb, pg_ctl, postgres: dpqd's embedded database
  tini             # PID 1 in the container: forwards signals, reaps postgres's children
  ca-certificates  # verifying a remote database's TLS certificate (sslmode=verify-full)
)

mode=all
list=0
for arg in "$@"; do
  case "$arg" in
    --runtime) mode=runtime ;;
    --list) list=1 ;;
    *) echo "install-deps: unknown argument $arg (usage: install-deps.sh [--runtime] [--list])" >&2
       exit 2 ;;
  esac
done
if [ "$mode" = runtime ]; then
  PACKAGES=("${RUNTIME_LIBRARIES[@]}" "${RUNTIME_TOOLS[@]}")
fi
if [ "$list" -eq 1 ]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: not root and sudo is not installed: run this script as root" >&2
    exit 1
  fi
  SUDO="sudo"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}" </dev/null
# The Debian package creates a default cluster (15/main); dpq never uses it.
echo "install-deps: done"
