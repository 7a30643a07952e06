"""Retrying calls that failed with UNAVAILABLE (the retry contract: the repository README,
"Failures and retries").

dpqd answers UNAVAILABLE for every failure after which repeating the request is safe: its
database is unreachable, restarting or shutting down, a connection was lost, a COMMIT is in doubt,
or concurrent requests conflicted. A query, batch, SQL script or training step report is repeated
with the SAME request id: the server then replays what an earlier attempt committed, or commits it
once, and never charges one request id twice. dpq.Client therefore draws the request id itself
(new_request_id) when the caller gave none, so every attempt carries the same one; reads are
repeated as they are. Calls that change state without a request id (creating analysts, grants,
datasets, collection reports, training runs) are never repeated: a lost attempt may have taken
effect.
"""
import dataclasses
import random
import uuid
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How many times, and how patiently, a safe call is repeated.

    attempts: calls in all, the first included (1 disables retries).
    initial_backoff, max_backoff: the pause before the second attempt and the longest pause, in
        seconds; each pause is `multiplier` times the previous one, up to max_backoff.
    jitter: each pause is drawn uniformly from [(1 - jitter) * pause, pause], so that clients
        failed by the same outage do not come back in step.
    codes: the status code names that are retried. dpqd uses UNAVAILABLE for all of its
        retryable failures; DEADLINE_EXCEEDED is safe too (with the same request id) but is only
        worth retrying with a longer timeout, so it is not in the default."""
    attempts: int = 3
    initial_backoff: float = 0.2
    max_backoff: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.5
    codes: Tuple[str, ...] = ("UNAVAILABLE",)

    def __post_init__(self):
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise ValueError("attempts must be an integer >= 1, not %r" % (self.attempts,))
        if not 0 <= self.initial_backoff <= self.max_backoff:
            raise ValueError("need 0 <= initial_backoff <= max_backoff")
        if self.multiplier < 1 or not 0 <= self.jitter <= 1:
            raise ValueError("need multiplier >= 1 and 0 <= jitter <= 1")
        object.__setattr__(self, "codes", tuple(self.codes))

    @property
    def enabled(self):
        return self.attempts > 1

    def backoff(self, retry, rng=random):
        """The pause in seconds before retry number `retry` (1: before the second attempt)."""
        pause = min(self.max_backoff, self.initial_backoff * self.multiplier ** (retry - 1))
        return pause * (1.0 - self.jitter * rng.random())


# A policy that never repeats a call: Client(retry=None) uses it.
NO_RETRY = RetryPolicy(attempts=1)


def new_request_id():
    """A fresh idempotency key: 'py-' and 128 random bits in hex (dpqd accepts up to 128
    printable ASCII characters)."""
    return "py-" + uuid.uuid4().hex
