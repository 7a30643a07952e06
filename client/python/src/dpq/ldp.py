"""Client-side local-DP randomizers: a true value becomes a report before it leaves the device.

Four mechanisms of Wang, Blocki, Li and Jha, "Locally Differentially Private Protocols for
Frequency Estimation" (USENIX Security 2017), each epsilon-LDP per report:

  rr   binary randomized response (Warner 1965): the true value w.p. p = e^eps / (e^eps + 1).
  krr  k-ary randomized response, "direct encoding" (Sec. 4.1): the true value w.p.
       p = e^eps / (e^eps + k - 1), each other value w.p. q = 1 / (e^eps + k - 1).
  oue  optimized unary encoding (Sec. 4.3): k bits, the true one set w.p. 1/2, every other one
       w.p. 1 / (e^eps + 1).
  olh  optimized local hashing (Sec. 4.4): g = max(2, round(e^eps + 1)); a uniform 64-bit seed,
       h = H(seed, v) in [0, g), and k-ary RR of h over [0, g) with p' = e^eps / (e^eps + g - 1).

Values are indices into the collection's declared domain. Reports follow the wire format of
dpq.v1.LdpReport (proto/dpq/v1/collection.proto): `index` (rr, krr), `unary_bits` (oue: bit j is
byte[j // 8] >> (j % 8) & 1, ceil(k/8) bytes, padding bits zero) or `seed`/`hashed` (olh).

Randomness comes from the OS CSPRNG (`secrets`). Coins are drawn as a uniform 53-bit fraction
compared with p, so each probability is off by less than 2^-53, far below any estimator's error.
Passing `rng` (a random.Random) is for tests only: a seeded generator is not private.
"""
import dataclasses
import hashlib
import math
import secrets
from typing import Optional

MECHANISMS = ("rr", "krr", "oue", "olh")
_SYSTEM_RNG = secrets.SystemRandom()


@dataclasses.dataclass(frozen=True)
class LdpReport:
    """One report: exactly one of `index`, `unary_bits`, or (`seed`, `hashed`) is set."""
    index: Optional[int] = None
    unary_bits: Optional[bytes] = None
    seed: Optional[int] = None
    hashed: Optional[int] = None

    def to_proto(self, module):
        """The dpq.v1.LdpReport message; `module` is the generated collection_pb2."""
        if self.index is not None:
            return module.LdpReport(index=self.index)
        if self.unary_bits is not None:
            return module.LdpReport(unary_bits=self.unary_bits)
        return module.LdpReport(olh=module.OlhReport(seed=self.seed, hashed=self.hashed))


def _check_epsilon(epsilon):
    if (not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool)
            or not math.isfinite(epsilon) or epsilon <= 0):
        raise ValueError("epsilon must be a finite number > 0, not %r" % (epsilon,))


def _check_index(value, k):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < k:
        raise ValueError("value must be a domain index in [0, %d), not %r" % (k, value))


def _check_domain(k, minimum=2):
    if isinstance(k, bool) or not isinstance(k, int) or k < minimum:
        raise ValueError("domain size must be an integer >= %d, not %r" % (minimum, k))


def _coin(probability, rng):
    """True with the given probability: a uniform 53-bit fraction below it."""
    return rng.getrandbits(53) < probability * (1 << 53)


def _k_ary_rr(value, k, epsilon, rng):
    """Direct encoding (Wang et al. 2017, Sec. 4.1): keep `value` w.p. e^eps / (e^eps + k - 1),
    else one of the other k - 1 values uniformly (each then has q = 1 / (e^eps + k - 1))."""
    if _coin(krr_probabilities(k, epsilon)[0], rng):
        return value
    other = rng.randrange(k - 1)
    return other if other < value else other + 1


def krr_probabilities(k, epsilon):
    """(p, q) of k-ary RR: p = e^eps / (e^eps + k - 1), q = 1 / (e^eps + k - 1). For large
    epsilon, computed as 1 / (1 + (k - 1) e^-eps) to avoid overflow."""
    tail = (k - 1) * math.exp(-epsilon)
    p = 1.0 / (1.0 + tail)
    return p, math.exp(-epsilon) / (1.0 + tail)


def rr(value, epsilon, rng=None):
    """Binary randomized response over a domain of exactly 2 values (index 0 or 1)."""
    _check_epsilon(epsilon)
    _check_index(value, 2)
    return LdpReport(index=_k_ary_rr(value, 2, epsilon, rng or _SYSTEM_RNG))


def krr(value, k, epsilon, rng=None):
    """k-ary randomized response (direct encoding) over a domain of k >= 2 values."""
    _check_epsilon(epsilon)
    _check_domain(k)
    _check_index(value, k)
    return LdpReport(index=_k_ary_rr(value, k, epsilon, rng or _SYSTEM_RNG))


def encode_unary(bits):
    """Bits -> bytes, LSB first: bit j is byte[j // 8] >> (j % 8) & 1; padding bits zero."""
    out = bytearray((len(bits) + 7) // 8)
    for j, bit in enumerate(bits):
        if bit:
            out[j // 8] |= 1 << (j % 8)
    return bytes(out)


def decode_unary(data, k):
    """The k bits of an encoded unary report (inverse of encode_unary)."""
    return [(data[j // 8] >> (j % 8)) & 1 for j in range(k)]


def oue(value, k, epsilon, rng=None):
    """Optimized unary encoding (Wang et al. 2017, Sec. 4.3): the true bit is 1 w.p. p = 1/2,
    every other bit 1 w.p. q = 1 / (e^eps + 1), independently."""
    _check_epsilon(epsilon)
    _check_domain(k)
    _check_index(value, k)
    rng = rng or _SYSTEM_RNG
    q = 1.0 / (1.0 + math.exp(epsilon)) if epsilon < 700 else 0.0
    bits = [_coin(0.5 if j == value else q, rng) for j in range(k)]
    return LdpReport(unary_bits=encode_unary(bits))


def olh_g(epsilon):
    """OLH's hash range g = max(2, round(e^eps + 1)) (Wang et al. 2017, Sec. 4.4: the g that
    minimises the estimator's variance). Rounds half up, like C++ std::round for positives."""
    _check_epsilon(epsilon)
    return max(2, int(math.floor(math.exp(epsilon) + 1.0 + 0.5)))


def olh_hash(seed, value, g):
    """H(seed, v) = (first 8 bytes, big-endian, of SHA-256(seed as 8 bytes big-endian || v as
    4 bytes big-endian)) mod g."""
    digest = hashlib.sha256(seed.to_bytes(8, "big") + value.to_bytes(4, "big")).digest()
    return int.from_bytes(digest[:8], "big") % g


def olh(value, k, epsilon, rng=None):
    """Optimized local hashing: a uniform 64-bit seed and k-ary RR of H(seed, value) over [0, g)."""
    _check_epsilon(epsilon)
    _check_domain(k)
    _check_index(value, k)
    rng = rng or _SYSTEM_RNG
    g = olh_g(epsilon)
    seed = rng.getrandbits(64)
    return LdpReport(seed=seed, hashed=_k_ary_rr(olh_hash(seed, value, g), g, epsilon, rng))


def supports(report, value, k, epsilon):
    """Whether `report` supports domain value `value` (the I_v of the estimator, Wang et al.
    2017, Thm. 2): the reported index (rr, krr), the value's bit (oue), or
    H(seed, value) == hashed (olh)."""
    if report.index is not None:
        return report.index == value
    if report.unary_bits is not None:
        return decode_unary(report.unary_bits, k)[value] == 1
    return olh_hash(report.seed, value, olh_g(epsilon)) == report.hashed


def randomize(mechanism, value, k, epsilon, rng=None):
    """The report of `value` (a domain index) under a collection's mechanism."""
    if mechanism == "rr":
        if k != 2:
            raise ValueError("rr needs a domain of exactly 2 values, not %d" % k)
        return rr(value, epsilon, rng)
    if mechanism == "krr":
        return krr(value, k, epsilon, rng)
    if mechanism == "oue":
        return oue(value, k, epsilon, rng)
    if mechanism == "olh":
        return olh(value, k, epsilon, rng)
    raise ValueError("unknown mechanism %r (one of: %s)" % (mechanism, ", ".join(MECHANISMS)))
