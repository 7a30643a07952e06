#!/usr/bin/env bash
# Container entrypoint (see Dockerfile): runs dpqd in the foreground as PID 1's child of --init.
#   DPQ_ADMIN_TOKEN_FILE  file holding the bootstrap admin token (e.g. /run/secrets/dpq_admin_token)
#   DPQ_ADMIN_TOKEN       the token itself (read by dpqd; used when no file is given)
#   DPQ_DATABASE_URL      libpq URL; empty: embedded PostgreSQL under /var/lib/dpq
# There is no default token: with neither variable set, dpqd warns and only existing admins can log in.
set -euo pipefail

# The migrations are compiled into dpqd.
args=(--listen 0.0.0.0:7777 --metrics-listen 0.0.0.0:9464 --data-dir /var/lib/dpq)
if [ -n "${DPQ_ADMIN_TOKEN_FILE:-}" ]; then
  args+=(--admin-token-file "$DPQ_ADMIN_TOKEN_FILE")
fi
if [ -n "${DPQ_DATABASE_URL:-}" ]; then
  args+=(--database-url "$DPQ_DATABASE_URL")
fi
exec /usr/local/bin/dpqd "${args[@]}" "$@"
