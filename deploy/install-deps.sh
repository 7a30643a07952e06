#!/usr/bin/env bash
# Installs every Debian 12 package dpq needs to build, test and run.
# Idempotent and non-interactive; the README, .ci/run and the Dockerfile all call this one script.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache git
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libpqxx-dev libabsl-dev prometheus-cpp-dev libssl-dev libcli11-dev nlohmann-json3-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-grpcio python3-yaml curl jq
  openssl  # the TLS test makes its certificates
  # the sanitizer and fuzzing stage (deploy/sanitize.sh): clang and its runtimes (ASan, UBSan, TSan,
  # libFuzzer), which --no-install-recommends would otherwise leave out
  clang-14 libclang-rt-14-dev
  # runtime: the embedded database and a Prometheus server for the scrape test
  postgresql-15 postgresql-contrib prometheus
)

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
