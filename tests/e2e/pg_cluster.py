"""A PostgreSQL 15 cluster run by a test itself, as the postgres user (the test must run as root),
so that the test can stop, restart and kill it under a dpqd started with --database-url.

Unix socket only by default (listen_addresses=''); tcp=True also listens on 127.0.0.1:<port>, for
URLs like the ones operators write (postgresql://postgres@127.0.0.1:<port>/dpq).
"""
import os
import shutil
import subprocess

import harness

PG_BIN = "/usr/lib/postgresql/15/bin"


class TestCluster:
    def __init__(self, root, tcp=False):
        self.pgdata = os.path.join(root, "pg")
        self.socket_dir = os.path.join(root, "sock")
        self.port = harness.free_port()  # names the socket file; the TCP port with tcp=True
        self.tcp = tcp
        self.log_file = os.path.join(root, "postgres.log")
        for d in (self.pgdata, self.socket_dir):
            os.makedirs(d, mode=0o700)
            shutil.chown(d, "postgres", "postgres")
        open(self.log_file, "a").close()
        shutil.chown(self.log_file, "postgres", "postgres")
        self.running = False

    def _pg(self, *argv, timeout_s=60, check=True):
        cmd = ["runuser", "-u", "postgres", "--"] + list(argv)
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s)
        if check and proc.returncode != 0:
            raise AssertionError("%s failed (exit %d): %s %s\nserver log tail:\n%s" % (
                " ".join(argv[:2]), proc.returncode, proc.stdout.decode(errors="replace"),
                proc.stderr.decode(errors="replace"), self.log_tail()))
        return proc

    def log_tail(self, lines=30):
        try:
            with open(self.log_file, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    @property
    def url(self):
        if self.tcp:
            return "postgresql://postgres@127.0.0.1:%d/dpq" % self.port
        return "postgresql:///dpq?host=%s&port=%d&user=postgres" % (self.socket_dir, self.port)

    def init_and_start(self):
        self._pg(PG_BIN + "/initdb", "-D", self.pgdata, "-U", "postgres", "-A", "trust", "--no-sync",
                 "-E", "UTF8", "--locale=C.UTF-8")
        self.start()
        self._pg(PG_BIN + "/createdb", "-h", self.socket_dir, "-p", str(self.port), "-U", "postgres",
                 "dpq")

    def _options(self):
        listen = "127.0.0.1" if self.tcp else "''"
        return "-k %s -p %d -c listen_addresses=%s -c fsync=off" % (self.socket_dir, self.port, listen)

    def start(self):
        self._pg(PG_BIN + "/pg_ctl", "-D", self.pgdata, "-l", self.log_file, "-w", "-t", "60",
                 "-o", self._options(), "start")
        self.running = True

    def restart(self, mode="fast"):
        """pg_ctl restart -m fast (sessions terminated, checkpoint) or -m immediate (no
        checkpoint: crash recovery at the start)."""
        self._pg(PG_BIN + "/pg_ctl", "-D", self.pgdata, "-l", self.log_file, "-w", "-t", "60",
                 "-m", mode, "-o", self._options(), "restart")

    def restart_fast(self):
        self.restart("fast")

    def stop(self, mode="immediate"):
        if self.running:
            self.running = False
            self._pg(PG_BIN + "/pg_ctl", "-D", self.pgdata, "-m", mode, "-w", "stop", check=False)

    def psql(self, sql):
        """Runs `sql` as the superuser over the socket; returns stdout (unaligned, tuples only)."""
        proc = self._pg(PG_BIN + "/psql", "-h", self.socket_dir, "-p", str(self.port), "-U",
                        "postgres", "-d", "dpq", "-XAtq", "-c", sql, timeout_s=30)
        return proc.stdout.decode().strip()

    def terminate_client_backends(self):
        """pg_terminate_backend of every client session of database dpq but this one (dpqd's
        pooled connections, mid-statement or idle); returns how many were signalled."""
        out = self.psql("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                        "pg_stat_activity WHERE datname = 'dpq' AND backend_type = 'client backend' "
                        "AND pid <> pg_backend_pid()")
        return int(out or 0)


def start_shard_cluster(root, user, password):
    """A started cluster (database dpq) whose `user` may create schemas in dpq and logs in by
    password (scram-sha-256) over the socket, as postgres_fdw requires of a shard for a role that
    is not a superuser; everyone else keeps trust. The caller stops it."""
    cluster = TestCluster(root)
    cluster.init_and_start()
    cluster.psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (user, password))
    cluster.psql("GRANT CREATE ON DATABASE dpq TO %s" % user)
    hba = os.path.join(cluster.pgdata, "pg_hba.conf")
    with open(hba) as f:
        rules = f.read()
    with open(hba, "w") as f:
        f.write("local all %s scram-sha-256\n" % user + rules)
    cluster.psql("SELECT pg_reload_conf()")
    return cluster
