# dpqd + dpqctl on Debian 12. Untested here (no Docker engine on the development machine).
#   docker build -t dpq .
#   docker run --init -e DPQ_ADMIN_TOKEN="$(openssl rand -hex 32)" -p 127.0.0.1:7777:7777 \
#     -p 127.0.0.1:9464:9464 -v dpq-data:/var/lib/dpq dpq
# Without DPQ_DATABASE_URL, dpqd runs its embedded PostgreSQL 15 under /var/lib/dpq as user dpq.
# Single stage on purpose: deploy/install-deps.sh is the one install script (build + runtime).
FROM debian:bookworm

# The packages first, so that this layer is cached across source changes.
COPY deploy/install-deps.sh /tmp/install-deps.sh
RUN bash /tmp/install-deps.sh && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh

WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DDPQ_BUILD_TESTS=OFF -DDPQ_BUILD_BENCH=OFF \
 && cmake --build /tmp/build --target dpqd dpqctl -j"$(nproc)" \
 && install -m 755 /tmp/build/bin/dpqd /tmp/build/bin/dpqctl /usr/local/bin/ \
 && install -m 755 deploy/docker-entrypoint.sh /usr/local/bin/dpq-entrypoint \
 && rm -rf /tmp/build /root/.cache/ccache

# dpqd (and so its embedded PostgreSQL) runs as the unprivileged user dpq.
RUN useradd --system --user-group --home-dir /var/lib/dpq --shell /usr/sbin/nologin dpq \
 && install -d -o dpq -g dpq -m 700 /var/lib/dpq
USER dpq
WORKDIR /var/lib/dpq
VOLUME /var/lib/dpq

# gRPC and Prometheus /metrics.
EXPOSE 7777 9464
# Environment read by the entrypoint: DPQ_ADMIN_TOKEN or DPQ_ADMIN_TOKEN_FILE (a secret file),
# DPQ_DATABASE_URL (optional; empty: embedded PostgreSQL). Extra arguments go to dpqd.
ENTRYPOINT ["/usr/local/bin/dpq-entrypoint"]
