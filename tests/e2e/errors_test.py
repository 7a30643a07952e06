#!/usr/bin/python3
"""End-to-end: bad input gets a clear error and loses nothing.

Every case asserts the exact gRPC code name that `dpqctl --json` prints AND that the privacy
budget (epsilon_spent, delta_spent) and the number of audit entries of every dataset are the same
afterwards. Cases that dpqctl itself refuses before sending anything (exit 2, usage error) are
marked CLIENT-SIDE in a comment; all the others reach dpqd.
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WRONG_TOKEN = "definitely-not-a-token-0123456789"
INJECTION = "x; drop table audit"

EXIT_RPC_ERROR = 1
EXIT_USAGE_ERROR = 2


class ErrorsTest(harness.DpqdTestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpqd = cls.new_class_dpqd()
        # slid with bounds on wages and age only: education stays undeclared on purpose.
        cls.create_slid(cls.dpqd, bounds=("wages=0:100", "age=0:120"))
        # A second dataset nobody is granted.
        cls.dpqd.ctl("dataset", "create", "--infer-types", "secret", "--csv", harness.data_file("salaries.csv"),
                     "--privacy-unit", "person_id")
        cls.alice = cls.create_analyst(cls.dpqd, "alice")
        cls.dpqd.ctl("grant", "alice", "slid")
        cls.dpqd.ctl("budget", "set", "slid", "--epsilon", 1, "--delta", 1e-6)
        cls.dpqd.ctl("budget", "set", "secret", "--epsilon", 1, "--delta", 1e-6)
        # Something already spent, so "budget set below spent" has something to be below.
        cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.1, token=cls.alice)
        cls.dpqd.ctl("query", "slid", "--aggregate", "count", "--epsilon", 0.05,
                     "--mechanism", "gaussian", "--delta", 1e-7, token=cls.alice)
        cls.dir = cls.make_class_temp_dir()

    def setUp(self):
        self.before = self.state()

    def tearDown(self):
        # Whatever the case did, nothing may have been charged or written to the audit trail.
        self.assertEqual(self.state(), self.before, "an error case changed the budget or audit")

    # -- helpers --------------------------------------------------------------------------

    def state(self):
        return {name: self.snapshot(self.dpqd, name) for name in ("slid", "secret")}

    def as_alice(self, *args):
        return self.dpqd.ctl(*args, token=self.alice, check=False)

    def as_admin(self, *args):
        return self.dpqd.ctl(*args, check=False)

    def query(self, *args):
        return self.as_alice("query", "slid", *args)

    def assert_rpc_error(self, result, code, message_contains=None):
        self.assert_error(result, code, message_contains)
        self.assertEqual(result.returncode, EXIT_RPC_ERROR,
                         "expected the server to refuse (exit 1): %r" % dict(result))

    def assert_usage_error(self, result, message_contains=None):
        self.assert_error(result, "INVALID_ARGUMENT", message_contains)
        self.assertEqual(result.returncode, EXIT_USAGE_ERROR,
                         "expected a client-side usage error (exit 2): %r" % dict(result))

    def write_csv(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_server_still_works(self):
        doc = self.dpqd.ctl("dataset", "show", "slid")
        self.assertEqual(doc["name"], "slid")
        audit = self.dpqd.ctl("audit", "slid")
        self.assertEqual(len(audit["entries"]), self.before["slid"][2])

    # -- authentication -------------------------------------------------------------------

    def test_no_token_is_unauthenticated(self):
        for args in (("query", "slid", "--aggregate", "count", "--epsilon", 0.1),
                     ("budget", "set", "slid", "--epsilon", 100, "--delta", 0.5),
                     ("audit", "slid"),
                     ("dataset", "list")):
            with self.subTest(command=args[0]):
                result = self.dpqd.ctl(*args, use_admin=False, check=False)
                self.assert_rpc_error(result, "UNAUTHENTICATED")

    def test_wrong_token_is_unauthenticated(self):
        for args in (("query", "slid", "--aggregate", "count", "--epsilon", 0.1),
                     ("budget", "set", "slid", "--epsilon", 100, "--delta", 0.5),
                     ("analyst", "create", "mallory")):
            with self.subTest(command=args[0]):
                result = self.dpqd.ctl(*args, token=WRONG_TOKEN, check=False)
                self.assert_rpc_error(result, "UNAUTHENTICATED")
        # A token differing from the admin's in its last character is just as wrong.
        result = self.dpqd.ctl("audit", "slid", token=harness.ADMIN_TOKEN[:-1] + "X", check=False)
        self.assert_rpc_error(result, "UNAUTHENTICATED")

    # -- authorisation --------------------------------------------------------------------

    def test_analyst_calling_admin_commands_is_permission_denied(self):
        cases = {
            "budget set": ("budget", "set", "slid", "--epsilon", 100, "--delta", 0.5),
            "audit": ("audit", "slid"),
            "analyst create": ("analyst", "create", "mallory"),
            "grant": ("grant", "alice", "secret"),
            "dataset create": ("dataset", "create", "--infer-types", "mine", "--csv", harness.data_file("pbc.csv"),
                               "--privacy-unit", "patient_id"),
        }
        for what, args in cases.items():
            with self.subTest(command=what):
                self.assert_rpc_error(self.as_alice(*args), "PERMISSION_DENIED")
        # None of them took effect.
        self.assert_rpc_error(self.as_admin("dataset", "show", "mine"), "NOT_FOUND")
        self.assert_rpc_error(
            self.as_alice("query", "secret", "--aggregate", "count", "--epsilon", 0.1),
            "PERMISSION_DENIED")
        created = self.as_admin("analyst", "create", "mallory")
        self.assertEqual(created.returncode, 0, "mallory should not exist yet: %r" % dict(created))

    def test_analyst_on_ungranted_dataset_is_permission_denied(self):
        self.assert_rpc_error(
            self.as_alice("query", "secret", "--aggregate", "count", "--epsilon", 0.1),
            "PERMISSION_DENIED")
        self.assert_rpc_error(self.as_alice("budget", "show", "secret"), "PERMISSION_DENIED")
        self.assert_rpc_error(self.as_alice("dataset", "show", "secret"), "PERMISSION_DENIED")
        listed = self.dpqd.ctl("dataset", "list", token=self.alice)
        self.assertEqual([d["name"] for d in listed["datasets"]], ["slid"])

    def test_unknown_dataset_is_not_found(self):
        self.assert_rpc_error(
            self.as_alice("query", "nosuch", "--aggregate", "count", "--epsilon", 0.1), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("budget", "show", "nosuch"), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("audit", "nosuch"), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("dataset", "show", "nosuch"), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("budget", "set", "nosuch", "--epsilon", 1,
                                            "--delta", 0), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("grant", "alice", "nosuch"), "NOT_FOUND")
        self.assert_rpc_error(self.as_admin("grant", "nobody", "slid"), "NOT_FOUND")

    # -- privacy parameters ---------------------------------------------------------------

    def test_non_positive_epsilon_is_invalid_argument_naming_epsilon(self):
        for eps in ("0", "-1", "-0"):
            with self.subTest(epsilon=eps):
                self.assert_rpc_error(self.query("--aggregate", "count", "--epsilon", eps),
                                      "INVALID_ARGUMENT", "epsilon")

    def test_non_finite_epsilon_is_refused_naming_epsilon(self):
        # CLIENT-SIDE: dpqctl's FINITE validator refuses nan/inf before sending (exit 2), so a
        # non-finite epsilon never reaches dpqd from this client.
        for eps in ("nan", "inf", "-inf", "1e999"):
            with self.subTest(epsilon=eps):
                self.assert_usage_error(self.query("--aggregate", "count", "--epsilon", eps),
                                        "epsilon")
        self.assert_usage_error(
            self.as_admin("budget", "set", "slid", "--epsilon", "inf", "--delta", 0), "epsilon")

    def test_laplace_with_positive_delta_is_invalid_argument(self):
        self.assert_rpc_error(
            self.query("--aggregate", "count", "--epsilon", 0.1, "--mechanism", "laplace",
                       "--delta", 1e-7), "INVALID_ARGUMENT", "delta")
        # Laplace is the default mechanism: a delta without --mechanism is the same mistake.
        self.assert_rpc_error(self.query("--aggregate", "count", "--epsilon", 0.1, "--delta", 1e-7),
                              "INVALID_ARGUMENT", "delta")

    def test_gaussian_delta_outside_open_unit_interval_is_invalid_argument(self):
        for delta in ("0", "1", "-1e-7", "2"):
            with self.subTest(delta=delta):
                self.assert_rpc_error(
                    self.query("--aggregate", "count", "--epsilon", 0.1, "--mechanism", "gaussian",
                               "--delta", delta), "INVALID_ARGUMENT", "delta")
        # No --delta at all: delta 0 on the wire.
        self.assert_rpc_error(
            self.query("--aggregate", "count", "--epsilon", 0.1, "--mechanism", "gaussian"),
            "INVALID_ARGUMENT", "delta")

    def test_exponential_mechanism_in_a_request_is_refused(self):
        # The word exists (answers name it for quantiles) but requests may not choose it.
        # CLIENT-SIDE, both as a flag and in a batch file (the server refuses it too).
        self.assert_usage_error(self.query("--aggregate", "count", "--epsilon", 0.1,
                                           "--mechanism", "exponential"))
        path = os.path.join(self.make_temp_dir(), "queries.json")
        with open(path, "w") as f:
            json.dump([{"aggregate": "count", "epsilon": 0.1, "mechanism": "exponential"}], f)
        self.assert_usage_error(self.as_alice("query-batch", "slid", "--file", path), "exponential")

    def test_bad_confidence_is_invalid_argument(self):
        for confidence in ("1", "-0.5", "1.5"):
            with self.subTest(confidence=confidence):
                self.assert_rpc_error(
                    self.query("--aggregate", "count", "--epsilon", 0.1, "--confidence", confidence),
                    "INVALID_ARGUMENT", "confidence")

    # -- bounds and columns ---------------------------------------------------------------

    def test_lower_not_below_upper_is_invalid_argument(self):
        for lower, upper in (("50", "10"), ("10", "10")):
            with self.subTest(lower=lower, upper=upper):
                self.assert_rpc_error(
                    self.query("--aggregate", "sum", "--column", "wages", "--lower", lower,
                               "--upper", upper, "--epsilon", 0.1), "INVALID_ARGUMENT", "lower")
        self.assert_rpc_error(
            self.query("--aggregate", "sum", "--column", "wages", "--lower", "10", "--epsilon", 0.1),
            "INVALID_ARGUMENT", "upper")

    def test_bounds_outside_declared_are_invalid_argument(self):
        # Beyond +-1e15 the public magnitude limit refuses first (docs/threat-model.md).
        for lower, upper, word in (("-10", "50", "bounds"), ("0", "200", "bounds"),
                                   ("-1e300", "1e300", "1e15")):
            with self.subTest(lower=lower, upper=upper):
                self.assert_rpc_error(
                    self.query("--aggregate", "mean", "--column", "wages", "--lower", lower,
                               "--upper", upper, "--epsilon", 0.1), "INVALID_ARGUMENT", word)

    def test_unknown_column_is_invalid_argument(self):
        self.assert_rpc_error(
            self.query("--aggregate", "sum", "--column", "salary", "--epsilon", 0.1),
            "INVALID_ARGUMENT", ["column", "salary"])
        # sum and mean need a column at all.
        self.assert_rpc_error(self.query("--aggregate", "mean", "--epsilon", 0.1),
                              "INVALID_ARGUMENT", "column")

    def test_text_column_for_sum_is_invalid_argument(self):
        self.assert_rpc_error(
            self.query("--aggregate", "sum", "--column", "sex", "--lower", "0", "--upper", "1",
                       "--epsilon", 0.1), "INVALID_ARGUMENT", "column")
        self.assert_rpc_error(
            self.query("--aggregate", "mean", "--column", "language", "--epsilon", 0.1),
            "INVALID_ARGUMENT", "column")

    def test_privacy_unit_column_cannot_be_summed(self):
        # Ids are the privacy unit, not a quantity (demo-data README: "Don't aggregate them").
        # person_id has no declared bounds, so at the least the bounds are missing.
        self.assert_rpc_error(
            self.query("--aggregate", "sum", "--column", "person_id", "--epsilon", 0.1),
            "INVALID_ARGUMENT")

    def test_sum_without_bounds_on_undeclared_column_is_invalid_argument(self):
        self.assert_rpc_error(
            self.query("--aggregate", "sum", "--column", "education", "--epsilon", 0.1),
            "INVALID_ARGUMENT", ["lower", "education"])

    def test_max_contributions_out_of_range_is_invalid_argument(self):
        for k in ("1000001", "2147483647"):
            with self.subTest(k=k):
                self.assert_rpc_error(
                    self.query("--aggregate", "count", "--epsilon", 0.1, "--max-contributions", k),
                    "INVALID_ARGUMENT", "max_contributions")
        # CLIENT-SIDE: negative K and K beyond int32 are refused by dpqctl's option parsing.
        for k in ("-1", "99999999999"):
            with self.subTest(k=k):
                self.assert_usage_error(
                    self.query("--aggregate", "count", "--epsilon", 0.1, "--max-contributions", k))
        # NOTE: K = 0 is NOT an error: the proto defines max_contributions 0 as "the default, 1"
        # (see cli_flow_test.test_contribution_bound_k_scales_count_and_sensitivity).

    def test_malformed_request_id_is_invalid_argument(self):
        # proto: "<= 128 printable ASCII chars".
        for request_id in ("x" * 129, "bad\tid", "caf\u00e9"):
            with self.subTest(request_id=request_id[:20]):
                self.assert_rpc_error(
                    self.query("--aggregate", "count", "--epsilon", 0.1, "--request-id",
                               request_id), "INVALID_ARGUMENT", "request_id")

    # -- budget ---------------------------------------------------------------------------

    def test_budget_set_below_spent_is_failed_precondition(self):
        spent_eps, spent_delta, _ = self.before["slid"]
        self.assertGreater(spent_eps, 0)
        self.assertGreater(spent_delta, 0)
        self.assert_rpc_error(
            self.as_admin("budget", "set", "slid", "--epsilon", spent_eps / 2, "--delta", 1e-6),
            "FAILED_PRECONDITION", "epsilon")
        self.assert_rpc_error(
            self.as_admin("budget", "set", "slid", "--epsilon", 1, "--delta", spent_delta / 2),
            "FAILED_PRECONDITION", "delta")
        budget = self.dpqd.ctl("budget", "show", "slid")
        self.assertEqual((budget["epsilon_total"], budget["delta_total"]), (1, 1e-6))

    def test_budget_set_with_invalid_totals_is_invalid_argument(self):
        for eps, delta, field in (("0", "0", "epsilon"), ("-1", "0", "epsilon"),
                                  ("1", "-0.1", "delta"), ("1", "1", "delta")):
            with self.subTest(epsilon=eps, delta=delta):
                self.assert_rpc_error(
                    self.as_admin("budget", "set", "secret", "--epsilon", eps, "--delta", delta),
                    "INVALID_ARGUMENT", field)

    # -- dataset creation -----------------------------------------------------------------

    def test_csv_with_wrong_field_count_names_the_line_and_creates_nothing(self):
        path = self.write_csv("short_row.csv",
                              "person_id,income,age\n1,10.5,30\n2,11.0,41\n3,12.5\n4,9.0,22\n")
        result = self.as_admin("dataset", "create", "--infer-types", "badcsv", "--csv", path,
                               "--privacy-unit", "person_id")
        # CLIENT-SIDE: dpqctl scans the whole file before uploading it and reports the row with the
        # wrong field count by line (exit 2). The server-side loader is exercised by
        # test_csv_with_unparsable_value_names_the_line_and_creates_nothing.
        self.assert_usage_error(result, "line 4")
        self.assert_rpc_error(self.as_admin("dataset", "show", "badcsv"), "NOT_FOUND")

    def test_csv_with_unparsable_value_names_the_line_and_creates_nothing(self):
        # The declared --type makes the client upload the file; the server's loader must refuse
        # line 5 ("forty" is no integer), in one transaction: nothing is created.
        path = self.write_csv("bad_value.csv",
                              "person_id,income,age\n1,10.5,30\n2,11.0,41\n3,12.5,57\n"
                              "4,9.0,forty\n5,8.0,22\n")
        result = self.as_admin("dataset", "create", "--infer-types", "badvalue", "--csv", path,
                               "--privacy-unit", "person_id", "--type", "age=integer")
        self.assert_rpc_error(result, "INVALID_ARGUMENT", "line 5")
        self.assert_rpc_error(self.as_admin("dataset", "show", "badvalue"), "NOT_FOUND")
        names = [d["name"] for d in self.dpqd.ctl("dataset", "list")["datasets"]]
        self.assertNotIn("badvalue", names)
        # The name is still free: a good file loads under it.
        good = self.write_csv("good.csv", "person_id,income,age\n1,10.5,30\n2,11.0,41\n")
        created = self.dpqd.ctl("dataset", "create", "--infer-types", "badvalue", "--csv", good,
                                "--privacy-unit", "person_id")
        self.assertEqual(created["rows_loaded"], 2)

    def test_duplicate_dataset_name_is_already_exists(self):
        show_before = self.dpqd.ctl("dataset", "show", "slid")
        path = self.write_csv("dup.csv", "person_id,wages\n1,5\n")
        self.assert_rpc_error(
            self.as_admin("dataset", "create", "--infer-types", "slid", "--csv", path, "--privacy-unit", "person_id"),
            "ALREADY_EXISTS")
        self.assertEqual(self.dpqd.ctl("dataset", "show", "slid"), show_before)

    def test_duplicate_analyst_is_already_exists_and_keeps_the_old_token(self):
        self.assert_rpc_error(self.as_admin("analyst", "create", "alice"), "ALREADY_EXISTS")
        self.assert_rpc_error(self.as_admin("analyst", "create", "admin"), "ALREADY_EXISTS")
        # alice's token was not rotated: she can still read her dataset.
        self.assertEqual(self.dpqd.ctl("dataset", "show", "slid", token=self.alice)["name"], "slid")

    # -- injection-looking names ----------------------------------------------------------

    def test_injection_looking_names_are_refused_and_server_keeps_working(self):
        # Names are checked against their pattern before any lookup: never NOT_FOUND.
        ok_codes = ("INVALID_ARGUMENT",)
        path = self.write_csv("inj.csv", "person_id,wages\n1,5\n2,7\n")
        cases = {
            "dataset create name": self.as_admin("dataset", "create", "--infer-types", INJECTION, "--csv", path,
                                                 "--privacy-unit", "person_id"),
            "query dataset": self.as_alice("query", INJECTION, "--aggregate", "count",
                                           "--epsilon", 0.1),
            "query quoted dataset": self.as_alice("query", "slid'; delete from audit; --",
                                                  "--aggregate", "count", "--epsilon", 0.1),
            "query column": self.query("--aggregate", "sum", "--column", INJECTION,
                                       "--lower", "0", "--upper", "1", "--epsilon", 0.1),
            "query quoted column": self.query("--aggregate", "sum", "--column",
                                              'wages") from slid; --', "--lower", "0",
                                              "--upper", "1", "--epsilon", 0.1),
            "audit": self.as_admin("audit", INJECTION),
            "budget show": self.as_admin("budget", "show", "slid' OR '1'='1"),
            "analyst create": self.as_admin("analyst", "create", INJECTION),
            "grant": self.as_admin("grant", "alice", INJECTION),
        }
        for what, result in cases.items():
            with self.subTest(case=what):
                self.assertEqual(result.returncode, EXIT_RPC_ERROR, dict(result))
                self.assertIn(result.error_code, ok_codes, dict(result))
        # A CSV whose header names a column like that.
        bad_header = self.write_csv("inj_header.csv",
                                    "person_id,%s\n1,5\n2,7\n" % INJECTION.replace(";", ""))
        result = self.as_admin("dataset", "create", "--infer-types", "injhdr", "--csv", bad_header,
                               "--privacy-unit", "person_id")
        self.assertIn(result.error_code, ok_codes, dict(result))
        self.assert_rpc_error(self.as_admin("dataset", "show", "injhdr"), "NOT_FOUND")
        self.assert_server_still_works()


if __name__ == "__main__":
    unittest.main(verbosity=2)
