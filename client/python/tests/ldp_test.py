"""The LDP randomizers of dpq.ldp: output distributions and the exact wire encoding.

Distribution tests draw N reports with a fixed seed (a seeded generator is for tests only) and
compare counts with the mechanism's law (Wang, Blocki, Li, Jha 2017). Each tolerance is derived so
that a correct randomizer fails with probability at most ALPHA = 1e-6 per test:
  - one count X ~ Binomial(N, p): |X - Np| <= z * sqrt(N p (1 - p)), z the two-sided normal
    quantile of ALPHA (normal approximation; N p (1 - p) > 1000 here, so the approximation's
    error, O(1/sqrt(Np(1-p))) by Berry-Esseen, is far below the margin);
  - several counts: Bonferroni, ALPHA split evenly over them;
  - a categorical law over k cells: Pearson's chi-square with k - 1 degrees of freedom, compared
    with its 1 - ALPHA quantile (every expected count > 1000).
"""
import math
import random
import statistics
import unittest

import _paths  # noqa: F401  pylint: disable=unused-import

from google.protobuf import descriptor_pb2, message_factory

from dpq import ldp

ALPHA = 1e-6
N = 20000
SEED = 20261203


def z_two_sided(alpha):
    return statistics.NormalDist().inv_cdf(1 - alpha / 2)


def chi_square_sf(x, df):
    """P(X > x) for X ~ chi-square with df degrees of freedom, in closed form (Abramowitz and
    Stegun 1964, 26.4.4 and 26.4.5): even df = 2m: e^(-x/2) sum_{i<m} (x/2)^i / i!; odd df:
    2 (1 - Phi(sqrt x)) + sqrt(2/pi) e^(-x/2) sum_{i=1}^{(df-1)/2} x^(i-1/2) / (1*3*...*(2i-1))."""
    if df % 2 == 0:
        half = x / 2
        return math.exp(-half) * sum(half ** i / math.factorial(i) for i in range(df // 2))
    total = 2 * (1 - statistics.NormalDist().cdf(math.sqrt(x)))
    term = math.sqrt(2 / math.pi) * math.sqrt(x) * math.exp(-x / 2)
    for i in range(1, (df - 1) // 2 + 1):
        total += term
        term *= x / (2 * i + 1)
    return total


def chi_square_quantile(alpha, df):
    """The x with P(X > x) = alpha, by bisection."""
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if chi_square_sf(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


class BinomialAssertions(unittest.TestCase):
    def assert_binomial(self, count, n, p, alpha=ALPHA, what=""):
        margin = z_two_sided(alpha) * math.sqrt(n * p * (1 - p))
        self.assertLessEqual(abs(count - n * p), margin,
                             "%s: %d of %d, expected %.1f +- %.1f" %
                             (what, count, n, n * p, margin))

    def assert_categorical(self, counts, probabilities, what=""):
        n = sum(counts)
        statistic = sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probabilities))
        threshold = chi_square_quantile(ALPHA, len(counts) - 1)
        self.assertLess(statistic, threshold, "%s: counts %s, chi-square %.2f >= %.2f" %
                        (what, counts, statistic, threshold))


class StatisticsHelpersTest(unittest.TestCase):
    def test_chi_square_quantile_matches_tables(self):
        # Published quantiles: 0.95 of df 2, 3, 4 -> 5.991, 7.815, 9.488; 0.999 of df 4 -> 18.467,
        # of df 5 -> 20.515.
        for alpha, df, x in ((0.05, 2, 5.991), (0.05, 3, 7.815), (0.05, 4, 9.488),
                             (0.001, 4, 18.467), (0.001, 5, 20.515)):
            self.assertAlmostEqual(chi_square_quantile(alpha, df), x, places=3)


class RandomizedResponseTest(BinomialAssertions):
    def test_rr_keeps_the_value_with_probability_e_eps_over_e_eps_plus_one(self):
        rng = random.Random(SEED)
        for value in (0, 1):
            kept = sum(ldp.rr(value, 1.0, rng).index == value for _ in range(N))
            self.assert_binomial(kept, N, math.e / (math.e + 1), ALPHA / 2, "rr value %d" % value)

    def test_krr_follows_p_and_q(self):
        k, epsilon, value = 5, 1.0, 3
        p, q = ldp.krr_probabilities(k, epsilon)
        self.assertAlmostEqual(p, math.e / (math.e + k - 1))
        self.assertAlmostEqual(p + (k - 1) * q, 1.0)
        rng = random.Random(SEED)
        counts = [0] * k
        for _ in range(N):
            counts[ldp.krr(value, k, epsilon, rng).index] += 1
        self.assert_categorical(counts, [p if j == value else q for j in range(k)], "krr")

    def test_krr_with_the_system_csprng(self):
        # The production path (secrets): same law, a fresh draw each run (false alarm 1e-6).
        k, epsilon = 3, 0.5
        p, q = ldp.krr_probabilities(k, epsilon)
        counts = [0] * k
        for _ in range(N):
            counts[ldp.krr(0, k, epsilon).index] += 1
        self.assert_categorical(counts, [p, q, q], "krr (secrets)")

    def test_rr_needs_a_domain_of_two(self):
        with self.assertRaises(ValueError):
            ldp.randomize("rr", 0, 3, 1.0)
        with self.assertRaises(ValueError):
            ldp.rr(2, 1.0)


class UnaryEncodingTest(BinomialAssertions):
    def test_bits_are_lsb_first_with_zero_padding(self):
        bits = [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]
        self.assertEqual(ldp.encode_unary(bits), bytes([0x01, 0x02]))
        self.assertEqual(ldp.encode_unary([0, 0, 0, 0, 0, 0, 0, 1]), bytes([0x80]))
        self.assertEqual(ldp.decode_unary(bytes([0x01, 0x02]), 10), bits)

    def test_oue_bit_frequencies(self):
        k, epsilon, value = 10, 1.0, 9  # 10 bits: 2 bytes, 6 padding bits
        rng = random.Random(SEED)
        ones = [0] * k
        for _ in range(N):
            report = ldp.oue(value, k, epsilon, rng)
            self.assertEqual(len(report.unary_bits), 2)
            self.assertEqual(report.unary_bits[1] & 0xFC, 0, "padding bits must be zero")
            for j, bit in enumerate(ldp.decode_unary(report.unary_bits, k)):
                ones[j] += bit
        q = 1 / (math.e + 1)
        # Each bit, and the k - 1 other bits pooled (independent bits: Binomial(N (k-1), q)),
        # which resolves q about 3 times finer: Bonferroni over k + 1 counts.
        for j in range(k):
            self.assert_binomial(ones[j], N, 0.5 if j == value else q, ALPHA / (k + 1),
                                 "bit %d" % j)
        self.assert_binomial(sum(ones) - ones[value], N * (k - 1), q, ALPHA / (k + 1),
                             "other bits pooled")


class LocalHashingTest(BinomialAssertions):
    # Hand-computed: the hashed bytes written out, SHA-256 by hashlib, the first 8 bytes read
    # big-endian and reduced mod g.
    VECTORS = [
        # (seed, value, bytes hashed, first 8 digest bytes, H mod 4, H mod 21)
        (0, 0, "000000000000000000000000", "15ec7bf0b50732b4", 0, 15),
        (1, 0, "000000000000000100000000", "249df6debaad7a29", 1, 19),
        (0, 1, "000000000000000000000001", "3423cfe2ed780f5d", 1, 7),
        (0x0123456789ABCDEF, 7, "0123456789abcdef00000007", "a3215709a3148624", 0, 18),
        (2 ** 64 - 1, 2 ** 32 - 1, "ffffffffffffffffffffffff", "8688d249e9d047b4", 0, 12),
        (42, 3, "000000000000002a00000003", "2427372ea58c2737", 3, 20),
    ]

    def test_hash_matches_hand_computed_vectors(self):
        import hashlib  # pylint: disable=import-outside-toplevel
        for seed, value, hashed, prefix, mod4, mod21 in self.VECTORS:
            self.assertEqual(hashlib.sha256(bytes.fromhex(hashed)).hexdigest()[:16], prefix)
            self.assertEqual(int(prefix, 16) % 4, mod4)
            self.assertEqual(ldp.olh_hash(seed, value, 4), mod4)
            self.assertEqual(ldp.olh_hash(seed, value, 21), mod21)

    def test_g_is_the_rounded_e_eps_plus_one(self):
        self.assertEqual(ldp.olh_g(0.1), 2)    # e^0.1 + 1 = 2.105
        self.assertEqual(ldp.olh_g(1.0), 4)    # 3.718
        self.assertEqual(ldp.olh_g(math.log(1.5)), 3)  # 2.5 (or a hair off it): rounds to 3
        self.assertEqual(ldp.olh_g(3.0), 21)   # 21.09

    def test_olh_supports_the_true_value_w_p_p_and_others_w_p_one_over_g(self):
        k, epsilon, value = 6, 1.0, 2
        g = ldp.olh_g(epsilon)
        p_prime = math.e / (math.e + g - 1)
        rng = random.Random(SEED)
        support = [0] * k
        hashed = [0] * g
        for _ in range(N):
            report = ldp.olh(value, k, epsilon, rng)
            self.assertTrue(0 <= report.seed < 2 ** 64 and 0 <= report.hashed < g)
            hashed[report.hashed] += 1
            for v in range(k):
                support[v] += ldp.supports(report, v, k, epsilon)
        # The true value: y = H(seed, v) w.p. p'. Another value: H(seed, v') is uniform on [0, g)
        # and independent of y given a uniform seed, so it matches w.p. 1/g.
        for v in range(k):
            self.assert_binomial(support[v], N, p_prime if v == value else 1 / g, ALPHA / (k + 1),
                                 "support of %d" % v)
        # y itself is uniform on [0, g): H(seed, v) is, and RR keeps uniformity.
        self.assert_categorical(hashed, [1 / g] * g, "olh hashed")


class ReportWireFormatTest(unittest.TestCase):
    """to_proto against dpq.v1.LdpReport built from the wire spec's field numbers."""

    @staticmethod
    def ldp_report_module():
        f = descriptor_pb2.FileDescriptorProto(name="ldp_wire_test.proto", package="dpq.v1",
                                               syntax="proto3")
        olh = f.message_type.add(name="OlhReport")
        olh.field.add(name="seed", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
        olh.field.add(name="hashed", number=2,
                      type=descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
        report = f.message_type.add(name="LdpReport")
        report.oneof_decl.add(name="report")
        for name, number, kind, type_name in (
                ("index", 1, descriptor_pb2.FieldDescriptorProto.TYPE_UINT32, None),
                ("unary_bits", 2, descriptor_pb2.FieldDescriptorProto.TYPE_BYTES, None),
                ("olh", 3, descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, ".dpq.v1.OlhReport")):
            field = report.field.add(name=name, number=number, type=kind, oneof_index=0,
                                     label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            if type_name:
                field.type_name = type_name
        classes = message_factory.GetMessages([f])

        class Module:  # the shape of the generated collection_pb2
            LdpReport = classes["dpq.v1.LdpReport"]
            OlhReport = classes["dpq.v1.OlhReport"]
        return Module

    def test_each_report_kind_serializes_to_its_field(self):
        self.check_wire_bytes(self.ldp_report_module())

    def test_the_generated_collection_module_agrees(self):
        try:
            from dpq.v1 import collection_pb2  # pylint: disable=import-outside-toplevel
        except ImportError:
            self.skipTest("proto/dpq/v1/collection.proto not in this build")
        self.check_wire_bytes(collection_pb2)

    def check_wire_bytes(self, module):
        # index = 1 (varint): tag 0x08.
        self.assertEqual(ldp.LdpReport(index=3).to_proto(module).SerializeToString(), b"\x08\x03")
        # Index 0 of a oneof is still sent (the oneof records which field is set).
        self.assertEqual(ldp.LdpReport(index=0).to_proto(module).SerializeToString(), b"\x08\x00")
        # unary_bits = 2 (length-delimited): tag 0x12.
        self.assertEqual(ldp.LdpReport(unary_bits=b"\x01\x02").to_proto(module)
                         .SerializeToString(), b"\x12\x02\x01\x02")
        # olh = 3 (message): tag 0x1a, then seed (0x08) and hashed (0x10).
        self.assertEqual(ldp.LdpReport(seed=5, hashed=2).to_proto(module).SerializeToString(),
                         b"\x1a\x04\x08\x05\x10\x02")


class ArgumentCheckTest(unittest.TestCase):
    def test_bad_arguments_raise_value_error(self):
        for call in (lambda: ldp.krr(0, 3, 0.0), lambda: ldp.krr(0, 3, float("nan")),
                     lambda: ldp.krr(3, 3, 1.0), lambda: ldp.krr(-1, 3, 1.0),
                     lambda: ldp.oue(0, 1, 1.0), lambda: ldp.olh(True, 3, 1.0),
                     lambda: ldp.randomize("xyz", 0, 3, 1.0)):
            with self.assertRaises(ValueError):
                call()


if __name__ == "__main__":
    unittest.main()
