"""The admin methods of dpq.Client (AdminService), named like the dpqctl commands they mirror."""
from dpq import errors, results, upload
from dpq.request_builder import ROLES, lookup
from dpq.v1 import dpq_pb2


class AdminMethods:
    """Mixed into Client; needs self._rpc and self._admin. An analyst token gets
    PermissionDenied from each of these."""

    def _call(self, method, request):
        """A call that changes state: never repeated (retry.py)."""
        return self._rpc.invoke(method, request)

    def _read(self, method, request):
        """A call that only reads: repeated after UNAVAILABLE under the client's RetryPolicy."""
        return self._rpc.invoke(method, request, retry=True)

    # -- datasets -------------------------------------------------------------------------

    def create_dataset(self, name, csv, privacy_unit, types, bounds=None, categories=None,
                       timeout=None):
        """dpqctl dataset create: `csv` is a path, bytes or CSV text with a header row; `types`
        maps every column to 'integer' | 'double' | 'text' | 'date' | 'timestamp'; `bounds` maps
        numeric columns to their public (lower, upper), and date or timestamp columns (where they
        are required) to text bounds ('2026-01-01', '2026-12-31'); `categories` maps text columns to their public values.
        Created and loaded in one transaction; returns a LoadResult."""
        data = upload.csv_bytes(csv)
        header = upload.dataset_header(name, privacy_unit, upload.header_columns(data), types,
                                       bounds or {}, categories or {})
        m = self._rpc.invoke(self._admin.CreateDataset, upload.stream(header, data), timeout)
        return results.LoadResult(results.Dataset.from_message(m.dataset), m.rows_loaded, m)

    def load_dataset(self, name, csv, timeout=None):
        """dpqctl dataset load: appends the rows of a CSV with the same header, all or nothing."""
        data = upload.csv_bytes(csv)
        upload.header_columns(data)
        header = dpq_pb2.DatasetHeader(name=name)
        m = self._rpc.invoke(self._admin.LoadDataset, upload.stream(header, data), timeout)
        return results.LoadResult(results.Dataset.from_message(m.dataset), m.rows_loaded, m)

    def drop_dataset(self, name, confirm=False):
        """dpqctl dataset drop --yes: deletes the raw rows (ledger and audit kept). Refused unless
        confirm=True."""
        if confirm is not True:
            raise errors.invalid_argument("drop_dataset deletes the raw rows irrecoverably: "
                                          "pass confirm=True")
        self._call(self._admin.DropDataset, dpq_pb2.DropDatasetRequest(name=name, confirm=True))

    # -- budgets --------------------------------------------------------------------------

    def set_budget(self, dataset, epsilon, delta=0.0, accountant="", preset="",
                   max_query_epsilon=None):
        """dpqctl budget set: the total budget (never below what is spent); returns the Budget,
        whose `warnings` carry advice about the chosen epsilon."""
        request = dpq_pb2.SetBudgetRequest(dataset=dataset, epsilon=epsilon, delta=delta,
                                           accountant=accountant, preset=preset)
        if max_query_epsilon is not None:
            request.max_query_epsilon = max_query_epsilon
        return results.Budget.from_message(self._call(self._admin.SetBudget, request))

    # -- principals and grants ------------------------------------------------------------

    def create_analyst(self, name, role="analyst"):
        """dpqctl analyst create: returns Credentials whose `token` is shown this once."""
        request = dpq_pb2.CreateAnalystRequest(name=name, role=lookup(ROLES, role, "role"))
        return results.Credentials.from_message(self._call(self._admin.CreateAnalyst, request))

    def analysts(self):
        """dpqctl analyst list: every principal with its state and grants."""
        return results.Records(
            self._read(self._admin.ListAnalysts, dpq_pb2.ListAnalystsRequest()).analysts)

    def revoke_analyst(self, name):
        self._call(self._admin.RevokeAnalyst, dpq_pb2.RevokeAnalystRequest(name=name))

    def rotate_token(self, name):
        """dpqctl token rotate: a new token (Credentials); the old one stops at once."""
        return results.Credentials.from_message(
            self._call(self._admin.RotateToken, dpq_pb2.RotateTokenRequest(name=name)))

    def grant(self, analyst, dataset, epsilon_cap=None, delta_cap=None):
        """dpqctl grant: access, with optional per-analyst caps (unset keeps a stored cap)."""
        request = dpq_pb2.GrantRequest(analyst=analyst, dataset=dataset)
        if epsilon_cap is not None:
            request.epsilon_cap = epsilon_cap
        if delta_cap is not None:
            request.delta_cap = delta_cap
        self._call(self._admin.Grant, request)

    def revoke_grant(self, analyst, dataset):
        self._call(self._admin.RevokeGrant,
                   dpq_pb2.RevokeGrantRequest(analyst=analyst, dataset=dataset))

    def grants(self, dataset=""):
        """dpqctl grant list: caps and spend per analyst ('' for every dataset)."""
        return results.Records(
            self._read(self._admin.ListGrants, dpq_pb2.ListGrantsRequest(dataset=dataset)).grants)

    # -- audit and status -----------------------------------------------------------------

    def audit(self, dataset):
        """dpqctl audit: every debit of the dataset, oldest first."""
        return results.Records(
            self._read(self._admin.ListAudit, dpq_pb2.ListAuditRequest(dataset=dataset)).entries)

    def verify_audit(self, dataset, full=False):
        """dpqctl audit verify [--full]: the recomputed hash chain and ledger, as a dict (`ok`,
        `full`, `rows_read`, ...). Without `full`, only the rows since the last verified one."""
        return results.message_dict(
            self._read(self._admin.VerifyAudit,
                       dpq_pb2.VerifyAuditRequest(dataset=dataset, full=full)))

    def admin_log(self):
        return results.Records(
            self._read(self._admin.ListAdminLog, dpq_pb2.ListAdminLogRequest()).entries)

    def verify_admin_log(self, full=False):
        return results.message_dict(
            self._read(self._admin.VerifyAdminLog, dpq_pb2.VerifyAdminLogRequest(full=full)))

    def status(self):
        """dpqctl status: server and schema version, the database, every budget (a dict)."""
        return results.message_dict(
            self._read(self._admin.ServerStatus, dpq_pb2.ServerStatusRequest()))
