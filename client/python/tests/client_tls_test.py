#!/usr/bin/python3
"""dpq.Client over TLS and mutual TLS to a real dpqd, with OpenSSL-made certificates (the helpers
of tests/e2e/tls_test.py): tls_ca alone, tls_ca with a client certificate, and the refusals."""
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import
import harness
from tls_test import make_ca, make_signed

harness.require_grpc_stubs()
import dpq  # noqa: E402  pylint: disable=wrong-import-position

# Failing handshakes are retried by gRPC until the deadline; a short one keeps the test quick.
REFUSAL_TIMEOUT_S = 5


class ClientTlsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.pki = cls.make_class_temp_dir("dpq-py-pki-")
        make_ca(cls.pki, "ca")
        make_signed(cls.pki, "ca", "server", san="IP:127.0.0.1,DNS:localhost")
        make_signed(cls.pki, "ca", "client")

    def pem(self, name):
        return "%s/%s" % (self.pki, name)

    def start(self, client_ca):
        dpqd = self.new_dpqd(start=False)
        dpqd.extra_args = ["--tls-cert", self.pem("server.pem"),
                           "--tls-key", self.pem("server.key")]
        if client_ca:
            dpqd.extra_args += ["--tls-client-ca", self.pem("ca.pem")]
        dpqd.start()
        return dpqd

    def whoami(self, dpqd, **tls):
        with dpq.Client(dpqd.address, harness.ADMIN_TOKEN, timeout=REFUSAL_TIMEOUT_S,
                        **tls) as client:
            return client.whoami()

    def test_tls_with_the_servers_ca(self):
        dpqd = self.start(client_ca=False)
        self.assertEqual(self.whoami(dpqd, tls_ca=self.pem("ca.pem"))["role"], "admin")
        with self.assertRaises(dpq.Unavailable):  # plaintext to a TLS port
            self.whoami(dpqd)

    def test_mutual_tls_needs_the_client_certificate(self):
        dpqd = self.start(client_ca=True)
        self.assertEqual(self.whoami(dpqd, tls_ca=self.pem("ca.pem"),
                                     tls_cert=self.pem("client.pem"),
                                     tls_key=self.pem("client.key"))["role"], "admin")
        with self.assertRaises(dpq.Unavailable):
            self.whoami(dpqd, tls_ca=self.pem("ca.pem"))

    def test_a_certificate_without_its_key_is_refused_before_connecting(self):
        with self.assertRaises(dpq.InvalidArgument):
            dpq.Client("127.0.0.1:1", "t", tls_ca=self.pem("ca.pem"),
                       tls_cert=self.pem("client.pem"))


if __name__ == "__main__":
    unittest.main()
