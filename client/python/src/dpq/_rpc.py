"""The gRPC channel of a Client and the one place where calls are made and errors mapped.

Sub-APIs (collections, training, ...) receive this object and call `invoke` with their own stubs,
so every call carries the same token, deadline and error mapping.
"""
import os

import grpc

from dpq import errors

# The largest message dpqd accepts by default (--max-message-mb 16); answers of large group-bys and
# audit listings can be big.
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def open_channel(server, tls_ca=None, tls_cert=None, tls_key=None):
    """A plaintext channel, or TLS when `tls_ca` is given (with `tls_cert`/`tls_key` for mutual TLS,
    like dpqctl --tls-ca/--tls-cert/--tls-key)."""
    options = [("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
               ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES)]
    if (tls_cert is None) != (tls_key is None):
        raise errors.invalid_argument("tls_cert and tls_key go together (mutual TLS)")
    if tls_ca is None:
        if tls_cert is not None:
            raise errors.invalid_argument("tls_cert/tls_key need tls_ca")
        return grpc.insecure_channel(server, options=options)
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(tls_ca),
        private_key=_read(tls_key) if tls_key else None,
        certificate_chain=_read(tls_cert) if tls_cert else None)
    return grpc.secure_channel(server, credentials, options=options)


class Rpc:
    """A channel, a bearer token and a default deadline."""

    def __init__(self, server, token, tls_ca=None, tls_cert=None, tls_key=None, timeout=30.0):
        server = server or os.environ.get("DPQ_SERVER")
        token = token if token is not None else os.environ.get("DPQ_TOKEN")
        if not server:
            raise errors.invalid_argument("no server: pass server='host:port' or set DPQ_SERVER")
        if not token:
            raise errors.invalid_argument("no token: pass token=... or set DPQ_TOKEN")
        self.server = server
        self.timeout = timeout
        self.channel = open_channel(server, tls_ca, tls_cert, tls_key)
        self._metadata = (("authorization", "Bearer " + token),)

    def invoke(self, method, request, timeout=None):
        """Calls a stub method (unary, or client-streaming with an iterator of requests) and
        returns the response message; a failed call raises the DpqError of its status code."""
        try:
            return method(request, metadata=self._metadata,
                          timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as e:
            raise errors.error_for(e.code().name, e.details() or "") from None

    def close(self):
        self.channel.close()
