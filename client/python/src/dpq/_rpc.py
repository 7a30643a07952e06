"""The gRPC channel of a Client and the one place where calls are made, retried and errors mapped.

Sub-APIs (collections, training, ...) receive this object and call `invoke` with their own stubs,
so every call carries the same token, deadline, retry policy and error mapping.
"""
import os
import time

import grpc

from dpq import errors
from dpq.retry import NO_RETRY, RetryPolicy, new_request_id

# The trailing metadata key in which dpqd names the request id of a failure whose retry with that
# id is safe (server/api/status_mapping.h).
_REQUEST_ID_TRAILER = "dpq-request-id"

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
    """A channel, a bearer token, a default deadline and a retry policy."""

    def __init__(self, server, token, tls_ca=None, tls_cert=None, tls_key=None, timeout=30.0,
                 retry=RetryPolicy()):
        server = server or os.environ.get("DPQ_SERVER")
        token = token if token is not None else os.environ.get("DPQ_TOKEN")
        if not server:
            raise errors.invalid_argument("no server: pass server='host:port' or set DPQ_SERVER")
        if not token:
            raise errors.invalid_argument("no token: pass token=... or set DPQ_TOKEN")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise errors.invalid_argument("retry must be a dpq.RetryPolicy or None")
        self.server = server
        self.timeout = timeout
        self.retry = retry or NO_RETRY
        self.sleep = time.sleep  # how a retry waits (tests record the pauses instead)
        self.channel = open_channel(server, tls_ca, tls_cert, tls_key)
        self._metadata = (("authorization", "Bearer " + token),)

    def request_id(self, request_id):
        """The caller's request id, or, when it gave none and retries are on, a fresh one drawn
        here, so that every attempt of the call carries the same id (retry.py)."""
        if request_id or not self.retry.enabled:
            return request_id or ""
        return new_request_id()

    def invoke(self, method, request, timeout=None, retry=False):
        """Calls a stub method (unary, or client-streaming with an iterator of requests) and
        returns the response message; a failed call raises the DpqError of its status code.
        retry=True (unary calls that are safe to repeat: reads, and writes with a request id)
        repeats the call under the client's RetryPolicy."""
        policy = self.retry if retry else NO_RETRY
        attempt = 0
        while True:
            attempt += 1
            try:
                return method(request, metadata=self._metadata,
                              timeout=self.timeout if timeout is None else timeout)
            except grpc.RpcError as e:
                error = _error_of(e, attempt)
            if error.code not in policy.codes or attempt >= policy.attempts:
                raise error
            self.sleep(policy.backoff(attempt))

    def close(self):
        self.channel.close()


def _error_of(rpc_error, attempts):
    """The DpqError of a failed call, with the request id dpqd named in its trailing metadata."""
    request_id = None
    try:
        for key, value in rpc_error.trailing_metadata() or ():
            if key == _REQUEST_ID_TRAILER:
                request_id = value
    except (AttributeError, ValueError):  # errors raised before any response have no trailers
        pass
    return errors.error_for(rpc_error.code().name, rpc_error.details() or "",
                            request_id=request_id, attempts=attempts)
