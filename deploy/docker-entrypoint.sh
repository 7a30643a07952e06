#!/usr/bin/env bash
# Container entrypoint (see Dockerfile): runs dpqd in the foreground as the child of tini (PID 1).
#   DPQ_ADMIN_TOKEN_FILE  file holding the bootstrap admin token (e.g. /run/secrets/dpq_admin_token)
#   DPQ_ADMIN_TOKEN       the token itself (read by dpqd; used when no file is given)
#   DPQ_DATABASE_URL      libpq URL; empty: embedded PostgreSQL under /var/lib/dpq
#   DPQ_REQUIRE_DATABASE_URL=1  refuse to start without DPQ_DATABASE_URL (several replicas, each on
#                         its own embedded database, would each keep a ledger: the budget multiplies)
# There is no default token: with neither variable set, dpqd warns and only existing admins can log in.
set -euo pipefail

# The migrations are compiled into dpqd.
args=(--listen 0.0.0.0:7777 --metrics-listen 0.0.0.0:9464 --data-dir /var/lib/dpq)
if [ -n "${DPQ_ADMIN_TOKEN_FILE:-}" ]; then
  args+=(--admin-token-file "$DPQ_ADMIN_TOKEN_FILE")
fi
if [ -n "${DPQ_DATABASE_URL:-}" ]; then
  args+=(--database-url "$DPQ_DATABASE_URL")
elif [ "${DPQ_REQUIRE_DATABASE_URL:-0}" = 1 ]; then
  echo "dpq-entrypoint: DPQ_REQUIRE_DATABASE_URL=1 but DPQ_DATABASE_URL is empty: set the database URL (Secret dpq-secrets, key database-url)" >&2
  exit 64
fi
exec /usr/local/bin/dpqd "${args[@]}" "$@"
