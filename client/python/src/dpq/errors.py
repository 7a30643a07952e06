"""Exceptions of the dpq client: one class per gRPC status code the server uses.

Every failed call raises a DpqError whose `code` is the gRPC status code name (the same name
`dpqctl --json` prints in {"error": {"code": ...}}) and whose `message` is the server's text. The
subclasses let callers catch one situation, e.g. `except dpq.ResourceExhausted` for an exhausted
budget or a limit. Arguments the client refuses itself, before sending anything, raise
InvalidArgument as well (it is also a ValueError).

`request_id` is the request id to retry with when dpqd named one (UNAVAILABLE, DEADLINE_EXCEEDED
of a query, batch, SQL script or step report), and `attempts` how many times the client sent the
call (its RetryPolicy repeats UNAVAILABLE).
"""


class DpqError(Exception):
    """A dpq call failed; `code` is the gRPC status code name, e.g. 'RESOURCE_EXHAUSTED'."""

    code = "UNKNOWN"

    def __init__(self, code, message, request_id=None, attempts=1):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.request_id = request_id
        self.attempts = attempts


class InvalidArgument(DpqError, ValueError):
    """Malformed request (the message names the field); nothing was charged."""


class NotFound(DpqError):
    """Unknown dataset, analyst, grant or collection."""


class AlreadyExists(DpqError):
    """The name is taken, or a request id was reused for a different query."""


class PermissionDenied(DpqError):
    """An analyst called an admin method, or a dataset it has no grant on."""


class Unauthenticated(DpqError):
    """Missing, unknown or revoked token."""


class ResourceExhausted(DpqError):
    """Over budget or past a limit (the message names it); nothing was charged."""


class FailedPrecondition(DpqError):
    """The request conflicts with the current state (e.g. a budget below what is spent)."""


class Unavailable(DpqError):
    """dpqd or its database failed in a way a retry resolves (unreachable, restarting, a lost
    connection, a commit in doubt, a conflict); retrying with the same request id is safe and
    charges it at most once. Raised after the client's own retries (RetryPolicy) ran out."""


class DeadlineExceeded(DpqError):
    """The call's timeout expired; retry with the same request id to get the answer charged once."""


class Unimplemented(DpqError):
    """dpqd (or this package's stubs) lacks the method, or the SQL is outside the subset."""


_BY_CODE = {
    "INVALID_ARGUMENT": InvalidArgument, "NOT_FOUND": NotFound, "ALREADY_EXISTS": AlreadyExists,
    "PERMISSION_DENIED": PermissionDenied, "UNAUTHENTICATED": Unauthenticated,
    "RESOURCE_EXHAUSTED": ResourceExhausted, "FAILED_PRECONDITION": FailedPrecondition,
    "UNAVAILABLE": Unavailable, "DEADLINE_EXCEEDED": DeadlineExceeded,
    "UNIMPLEMENTED": Unimplemented,
}


def error_for(code, message, request_id=None, attempts=1):
    """The exception for a status code name (DpqError itself for codes without a subclass)."""
    return _BY_CODE.get(code, DpqError)(code, message, request_id, attempts)


def invalid_argument(message):
    """A client-side refusal: raised before anything is sent."""
    return InvalidArgument("INVALID_ARGUMENT", message)
