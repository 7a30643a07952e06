# dpqd + dpqctl on Debian 12, in two stages. Never built here (no container engine on the
# development machine); tests/e2e/packaging_test.py checks what can be checked without one.
#   docker build -t dpq .
#   docker run -e DPQ_ADMIN_TOKEN="$(openssl rand -hex 32)" -p 127.0.0.1:7777:7777 \
#     -p 127.0.0.1:9464:9464 -v dpq-data:/var/lib/dpq dpq
# Without DPQ_DATABASE_URL, dpqd runs its embedded PostgreSQL 15 under /var/lib/dpq as user dpq.

# --- build: the same install script, with the same arguments, as CI (deploy/test.sh) ------------
FROM debian:bookworm AS build
# The packages first, so that this layer is cached across source changes.
COPY deploy/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDPQ_BUILD_TESTS=OFF -DDPQ_BUILD_BENCH=OFF \
 && cmake --build /tmp/build --target dpqd dpqctl -j"$(nproc)" \
 && install -d /out \
 && install -m 755 /tmp/build/bin/dpqd /tmp/build/bin/dpqctl /out/ \
 && strip --strip-debug /out/dpqd /out/dpqctl

# --- runtime: shared libraries and PostgreSQL 15 only (install-deps.sh --runtime), no compiler ---
FROM debian:bookworm-slim AS runtime
COPY deploy/install-deps.sh /tmp/install-deps.sh
# postgresql-common would create and start a cluster 15/main on install: dpqd never uses it.
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && bash /tmp/install-deps.sh --runtime \
 && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh

COPY --from=build /out/dpqd /out/dpqctl /usr/local/bin/
COPY deploy/docker-entrypoint.sh /usr/local/bin/dpq-entrypoint

# dpqd (and so its embedded PostgreSQL) runs as the unprivileged user dpq (initdb refuses root).
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/dpq --shell /usr/sbin/nologin dpq \
 && install -d -o dpq -g dpq -m 700 /var/lib/dpq \
 && chmod 755 /usr/local/bin/dpq-entrypoint
USER dpq
WORKDIR /var/lib/dpq
VOLUME /var/lib/dpq

# gRPC and Prometheus /metrics (the entrypoint's --listen and --metrics-listen).
EXPOSE 7777 9464

# gRPC health (grpc.health.v1): SERVING only while the database answers with the schema this dpqd
# knows. With TLS on the gRPC port, override this with `dpqctl --tls-ca ... health`.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/dpqctl", "--server", "127.0.0.1:7777", "--timeout", "4", "health"]

# Environment read by the entrypoint: DPQ_ADMIN_TOKEN or DPQ_ADMIN_TOKEN_FILE (a secret file),
# DPQ_DATABASE_URL (optional; empty: embedded PostgreSQL). Extra arguments go to dpqd.
# tini is PID 1: it forwards SIGTERM to dpqd and reaps the embedded PostgreSQL's orphans.
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/dpq-entrypoint"]
