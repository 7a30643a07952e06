#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running dpqd with the demo datasets loaded:
#   sudo bash deploy/up.sh          (as root: bash deploy/up.sh)
# Installs the packages (deploy/install-deps.sh), builds dpqd and dpqctl, creates the admin token
# once, starts dpqd on its embedded PostgreSQL, loads the demo datasets, creates the analyst "demo",
# prints how to connect, then keeps dpqd in the foreground: Ctrl-C / SIGTERM stops dpqd, which stops
# its PostgreSQL. Re-runnable: a second run installs nothing, reloads nothing and keeps the tokens.
#
# Environment:
#   DPQ_LISTEN          gRPC address               (default 127.0.0.1:7777)
#   DPQ_METRICS_LISTEN  Prometheus /metrics address (default 127.0.0.1:9464)
#   DPQ_DATA_DIR        tokens, log and the embedded PostgreSQL cluster (default <repo>/dpq-data)
#   DPQ_DATABASE_URL    use this PostgreSQL (libpq URL) instead of the embedded one
#   DPQ_BUILD_DIR       CMake build directory       (default build)
#   DPQ_START_TIMEOUT   seconds to wait for dpqd to answer (default 120)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# A relative DPQ_DATA_DIR is relative to where the script was started; the default is in the repo.
# As root the embedded PostgreSQL runs as the `postgres` user, which must be able to reach the data
# dir; a checkout in a mode-700 home (e.g. /root) is not reachable, so the default moves to
# /var/lib/dpq there.
if [ -z "${DPQ_DATA_DIR:-}" ] && [ "$(id -u)" -eq 0 ] && id postgres >/dev/null 2>&1 &&
   ! runuser -u postgres -- test -x "$ROOT" 2>/dev/null; then
  DPQ_DATA_DIR=/var/lib/dpq
  echo "up.sh: $ROOT is not reachable by the postgres user; using DPQ_DATA_DIR=$DPQ_DATA_DIR"
fi
case "${DPQ_DATA_DIR:=$ROOT/dpq-data}" in /*) ;; *) DPQ_DATA_DIR="$PWD/$DPQ_DATA_DIR" ;; esac
cd "$ROOT"

DPQ_LISTEN="${DPQ_LISTEN:-127.0.0.1:7777}"
DPQ_METRICS_LISTEN="${DPQ_METRICS_LISTEN:-127.0.0.1:9464}"
BUILD_DIR="${DPQ_BUILD_DIR:-build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
START_TIMEOUT="${DPQ_START_TIMEOUT:-120}"

log() { printf '[up] %s\n' "$*"; }
die() { printf '[up] error: %s\n' "$*" >&2; exit 1; }

# --- 1. packages -----------------------------------------------------------------------------
bash "$ROOT/deploy/install-deps.sh"

# --- 2. build only what we run ----------------------------------------------------------------
log "building dpqd and dpqctl in $BUILD_DIR"
t0=$SECONDS
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD_DIR/configure.log" 2>&1 \
  || { tail -n 40 "$BUILD_DIR/configure.log" >&2; die "cmake configure failed (log: $BUILD_DIR/configure.log)"; }
cmake --build "$BUILD_DIR" --target dpqd dpqctl -j"$(nproc)"
log "build done in $((SECONDS - t0)) s"
DPQD="$BUILD_DIR/bin/dpqd"
DPQCTL="$BUILD_DIR/bin/dpqctl"
[ -x "$DPQD" ] && [ -x "$DPQCTL" ] || die "build did not produce $DPQD and $DPQCTL"

# --- 3. data directory and admin token (created once, never a default) --------------------------
mkdir -p "$DPQ_DATA_DIR"
DPQ_DATA_DIR="$(cd "$DPQ_DATA_DIR" && pwd)"
ADMIN_TOKEN_FILE="$DPQ_DATA_DIR/admin.token"
DEMO_TOKEN_FILE="$DPQ_DATA_DIR/demo.token"
DPQD_LOG="$DPQ_DATA_DIR/dpqd.log"

random_hex32() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
if [ ! -s "$ADMIN_TOKEN_FILE" ]; then
  (umask 077 && random_hex32 >"$ADMIN_TOKEN_FILE")
  log "created the admin token in $ADMIN_TOKEN_FILE"
fi
chmod 600 "$ADMIN_TOKEN_FILE"

# --- 4. start dpqd ----------------------------------------------------------------------------
args=(--listen "$DPQ_LISTEN" --metrics-listen "$DPQ_METRICS_LISTEN" --data-dir "$DPQ_DATA_DIR"
      --admin-token-file "$ADMIN_TOKEN_FILE")
if [ -n "${DPQ_DATABASE_URL:-}" ]; then
  args+=(--database-url "$DPQ_DATABASE_URL")
  db_desc="the database at \$DPQ_DATABASE_URL"
else
  db_desc="embedded PostgreSQL 15 in $DPQ_DATA_DIR/pg"
fi

DPQD_PID=""
stop_dpqd() {
  if [ -n "$DPQD_PID" ] && kill -0 "$DPQD_PID" 2>/dev/null; then
    log "stopping dpqd (pid $DPQD_PID)"
    kill -TERM "$DPQD_PID" 2>/dev/null || true
    wait "$DPQD_PID" 2>/dev/null || true
  fi
}
trap stop_dpqd EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "starting dpqd on $DPQ_LISTEN ($db_desc); log: $DPQD_LOG"
echo "---- $(date -u +%FT%TZ) deploy/up.sh starts dpqd" >>"$DPQD_LOG"
"$DPQD" "${args[@]}" >>"$DPQD_LOG" 2>&1 &
DPQD_PID=$!

export DPQ_SERVER="$DPQ_LISTEN"
admin() { DPQ_TOKEN="$(cat "$ADMIN_TOKEN_FILE")" "$DPQCTL" "$@"; }

deadline=$((SECONDS + START_TIMEOUT))
until admin --timeout 2 dataset list >/dev/null 2>&1; do
  if ! kill -0 "$DPQD_PID" 2>/dev/null; then
    tail -n 30 "$DPQD_LOG" >&2
    die "dpqd exited during start-up (log above: $DPQD_LOG)"
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    tail -n 30 "$DPQD_LOG" >&2
    die "dpqd did not answer on $DPQ_LISTEN within ${START_TIMEOUT}s (log above: $DPQD_LOG)"
  fi
  sleep 0.5
done
log "dpqd answers on $DPQ_LISTEN"

# --- 5. demo datasets, the analyst "demo" and its grants -----------------------------------------
DPQCTL="$DPQCTL" DPQ_SERVER="$DPQ_LISTEN" DPQ_TOKEN="$(cat "$ADMIN_TOKEN_FILE")" \
  bash "$ROOT/deploy/load-demo.sh"

demo_token_works() {
  [ -s "$DEMO_TOKEN_FILE" ] && DPQ_TOKEN="$(cat "$DEMO_TOKEN_FILE")" "$DPQCTL" dataset list >/dev/null 2>&1
}
if ! demo_token_works; then
  if out="$(admin --json analyst create demo 2>&1)"; then
    (umask 077 && jq -r .token <<<"$out" >"$DEMO_TOKEN_FILE")
    log "created the analyst demo; token saved in $DEMO_TOKEN_FILE"
  else
    die "cannot create the analyst demo (and $DEMO_TOKEN_FILE holds no working token): $out"
  fi
fi
chmod 600 "$DEMO_TOKEN_FILE"
for ds in slid pbc colon salaries; do
  # A repeated grant is harmless; ALREADY_EXISTS is fine too.
  out="$(admin --json grant demo "$ds" 2>&1)" || grep -q ALREADY_EXISTS <<<"$out" \
    || die "grant demo $ds failed: $out"
done

# --- 6. how to use it -------------------------------------------------------------------------
DEMO_TOKEN="$(cat "$DEMO_TOKEN_FILE")"
REL_CTL="${DPQCTL#"$PWD"/}"
cat <<EOF

================================================================================================
 dpqd is running (pid $DPQD_PID)
   gRPC           $DPQ_LISTEN  (plaintext)
   metrics        http://$DPQ_METRICS_LISTEN/metrics
   database       $db_desc
   admin token    $ADMIN_TOKEN_FILE  (mode 600)
   analyst demo   token $DEMO_TOKEN  (also in $DEMO_TOKEN_FILE)
   server log     $DPQD_LOG

 Try, in another shell (from $ROOT):

   export DPQ_SERVER=$DPQ_LISTEN DPQ_TOKEN=$DEMO_TOKEN
   $REL_CTL dataset list
   $REL_CTL query slid --aggregate mean --column wages --epsilon 0.5
   $REL_CTL query colon --aggregate count --max-contributions 2 --epsilon 0.5 --json
   $REL_CTL budget show slid

 As admin:  DPQ_TOKEN=\$(cat $ADMIN_TOKEN_FILE) $REL_CTL audit slid
 The README has the full tour. Ctrl-C stops dpqd and its PostgreSQL.
================================================================================================

EOF

# --- 7. foreground: show the server log until dpqd exits -----------------------------------------
tail -n 0 -f --pid="$DPQD_PID" "$DPQD_LOG" &
TAIL_PID=$!
status=0
wait "$DPQD_PID" || status=$?
DPQD_PID=""
wait "$TAIL_PID" 2>/dev/null || true
log "dpqd exited with status $status"
exit "$status"
