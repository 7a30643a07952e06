#!/usr/bin/python3
"""End-to-end TLS and mutual TLS, with certificates made by OpenSSL for the test.

* dpqd with --tls-cert/--tls-key: dpqctl --tls-ca connects; a plaintext client cannot (the port
  speaks only TLS).
* With --tls-client-ca as well: a client presenting a certificate signed by that CA connects;
  without one, or with one from another CA, the handshake fails and no handler runs.
* --tls-client-ca without a server certificate is refused at start-up.
"""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=60)


def make_ca(folder, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=%s" % name,
            "-keyout", name + ".key", "-out", name + ".pem", cwd=folder)


def make_signed(folder, ca, name, san=None):
    """A key and a certificate for `name` signed by `ca` (with subjectAltName `san`)."""
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=%s" % name,
            "-keyout", name + ".key", "-out", name + ".csr", cwd=folder)
    args = ["x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-out", name + ".pem"]
    if san:
        with open(os.path.join(folder, name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\n" % san)
        args += ["-extfile", name + ".ext"]
    openssl(*args, cwd=folder)


class TlsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.pki = cls.make_class_temp_dir("dpq-pki-")
        make_ca(cls.pki, "ca")
        make_ca(cls.pki, "rogue_ca")
        make_signed(cls.pki, "ca", "server", san="IP:127.0.0.1,DNS:localhost")
        make_signed(cls.pki, "ca", "client")
        make_signed(cls.pki, "rogue_ca", "rogue_client")

    def pem(self, name):
        return os.path.join(self.pki, name)

    def tls_dpqd(self, client_ca):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args = ["--tls-cert", self.pem("server.pem"), "--tls-key", self.pem("server.key")]
        if client_ca:
            dpqd.extra_args += ["--tls-client-ca", self.pem("ca.pem")]
            dpqd.ctl_args = ["--tls-ca", self.pem("ca.pem"), "--tls-cert", self.pem("client.pem"),
                             "--tls-key", self.pem("client.key")]
        else:
            dpqd.ctl_args = ["--tls-ca", self.pem("ca.pem")]
        dpqd.start()
        return dpqd

    def whoami_with(self, dpqd, ctl_args):
        saved, dpqd.ctl_args = dpqd.ctl_args, ctl_args
        try:
            return dpqd.ctl("whoami", check=False)
        finally:
            dpqd.ctl_args = saved

    def test_tls_serves_tls_clients_and_refuses_plaintext(self):
        dpqd = self.tls_dpqd(client_ca=False)
        self.assertIn("(TLS)", dpqd.log_text())
        self.assertEqual(dpqd.ctl("whoami")["role"], "admin")
        self.create_slid(dpqd)  # a streamed upload over TLS too
        plain = self.whoami_with(dpqd, [])
        self.assert_error(plain, "UNAVAILABLE")

    def test_mutual_tls_requires_a_client_certificate_from_the_ca(self):
        dpqd = self.tls_dpqd(client_ca=True)
        self.assertIn("(TLS, client certificates required)", dpqd.log_text())
        self.assertEqual(dpqd.ctl("whoami")["role"], "admin")
        no_cert = self.whoami_with(dpqd, ["--tls-ca", self.pem("ca.pem")])
        self.assert_error(no_cert, "UNAVAILABLE")
        rogue = self.whoami_with(dpqd, ["--tls-ca", self.pem("ca.pem"), "--tls-cert",
                                        self.pem("rogue_client.pem"), "--tls-key",
                                        self.pem("rogue_client.key")])
        self.assert_error(rogue, "UNAVAILABLE")
        self.assert_error(self.whoami_with(dpqd, []), "UNAVAILABLE")
        # The certificate proves the machine, the token still the principal.
        self.assert_error(dpqd.ctl("whoami", token="dpq_" + "0" * 64, check=False),
                          "UNAUTHENTICATED")

    def test_client_ca_without_a_server_certificate_is_refused_at_start(self):
        proc = subprocess.run([harness.dpqd_path(), "--tls-client-ca", self.pem("ca.pem")],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("--tls-client-ca needs --tls-cert and --tls-key", proc.stderr + proc.stdout)

    def test_dpqctl_client_certificate_flags_go_together(self):
        dpqd = self.new_dpqd()
        result = self.whoami_with(dpqd, ["--tls-cert", self.pem("client.pem")])
        self.assert_error(result, "INVALID_ARGUMENT", "--tls-cert and --tls-key go together")
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
