"""client.training: DP-SGD training runs charged to a dataset's ledger (TrainingService), a
sub-object of dpq.Client built from the client's shared Rpc (channel, token, deadline, errors).

A trainer declares its run (Poisson sampling rate q, noise multiplier z, delta), then reports its
steps as it goes; each report is priced from (q, z, delta, steps) only (Abadi et al. 2016,
Alg. 1 and the moments accountant, Sec. 3.1). A report that does not fit the budget raises
dpq.ResourceExhausted and charges nothing: the trainer must stop before running those steps.
"""
import dataclasses
from typing import Optional

from dpq import errors, tables
from dpq.results import _FromMessage, message_dict
from dpq.v1 import training_pb2, training_pb2_grpc


@dataclasses.dataclass
class TrainingRun(_FromMessage):
    """A run and its spend so far. `steps_left` is None where the server did not compute it
    (list(); start and report_steps on pld/basic/advanced ledgers: ask get())."""
    dataset: str
    run: str
    analyst: str
    sampling_rate: float
    noise_multiplier: float
    delta: float
    target_epsilon: Optional[float]
    planned_steps: Optional[int]
    created_at: str
    accountant: str
    steps: int
    reports: int
    epsilon: float
    epsilon_charged: float
    delta_charged: float
    steps_left: Optional[int]
    budget_epsilon_remaining: float
    budget_delta_remaining: float
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(m.dataset, m.run, m.analyst, m.sampling_rate, m.noise_multiplier, m.delta,
                   m.target_epsilon if m.target_epsilon > 0 else None,
                   m.planned_steps if m.planned_steps > 0 else None, m.created_at, m.accountant,
                   m.steps, m.reports, m.epsilon, m.epsilon_charged, m.delta_charged,
                   m.steps_left if m.steps_left >= 0 else None, m.budget_epsilon_remaining,
                   m.budget_delta_remaining, m)


@dataclasses.dataclass
class StepReport(_FromMessage):
    """One committed step report: its charge, audit row and the run after it. `replayed`: a retry
    with an already committed request id, charged nothing now."""
    run: TrainingRun
    request_id: str
    seq: int
    epsilon: float
    delta: float
    method: str
    replayed: bool
    message: object = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_message(cls, m):
        return cls(TrainingRun.from_message(m.run), m.request_id, m.seq, m.epsilon, m.delta,
                   m.method, m.replayed, m)


class TrainingRuns(list):
    """A list of TrainingRun; to_pandas() gives one row per run."""

    def to_pandas(self):
        return tables.data_frame([message_dict(r.message) for r in self],
                                 columns=[f.name for f in dataclasses.fields(TrainingRun)][:-1])


class Training:
    """client.training; every method raises a dpq.DpqError subclass on failure."""

    def __init__(self, rpc):
        self._rpc = rpc
        self._stub = training_pb2_grpc.TrainingServiceStub(rpc.channel)

    def start(self, dataset, run, sampling_rate, noise_multiplier=None, delta=None,
              target_epsilon=None, steps=None):
        """Registers a run (charges nothing). Give `noise_multiplier`, or `target_epsilon` with
        `steps` and dpq calibrates z so that `steps` steps cost at most the target (as dpqctl
        training start --target-epsilon E --steps N)."""
        if delta is None:
            raise errors.invalid_argument("delta is required: the delta the run's epsilon is at")
        if noise_multiplier is None and (target_epsilon is None or steps is None):
            raise errors.invalid_argument(
                "give noise_multiplier, or target_epsilon with steps to calibrate it")
        request = training_pb2.StartRunRequest(
            dataset=dataset, run=run, sampling_rate=sampling_rate,
            noise_multiplier=noise_multiplier or 0.0, delta=delta,
            target_epsilon=target_epsilon or 0.0, steps=steps or 0)
        return TrainingRun.from_message(self._rpc.invoke(self._stub.StartRun, request))

    def report_steps(self, run, steps, request_id="", dataset=""):
        """Charges `steps` steps of `run` (a name or a TrainingRun) before the trainer runs them;
        ResourceExhausted (nothing charged) when they do not fit. Reuse `request_id` when
        retrying so the report is charged once; without one the client draws it (when retries
        are on) and repeats the report after UNAVAILABLE with that same id."""
        dataset, run = self._name(run, dataset)
        request = training_pb2.ReportStepsRequest(dataset=dataset, run=run, steps=steps,
                                                  request_id=self._rpc.request_id(request_id))
        return StepReport.from_message(self._rpc.invoke(self._stub.ReportSteps, request, retry=True))

    def get(self, run, dataset=""):
        """The run with its steps, epsilon so far and the steps that still fit."""
        dataset, run = self._name(run, dataset)
        return TrainingRun.from_message(self._rpc.invoke(
            self._stub.GetRun, training_pb2.GetRunRequest(dataset=dataset, run=run), retry=True))

    def list(self, dataset=None):
        """The caller's runs on `dataset` (an admin: every run); None: on every dataset the
        caller may see."""
        if dataset is None:
            from dpq.v1 import dpq_pb2, dpq_pb2_grpc  # pylint: disable=import-outside-toplevel
            analyst = dpq_pb2_grpc.AnalystServiceStub(self._rpc.channel)
            names = [d.name for d in self._rpc.invoke(analyst.ListDatasets,
                                                      dpq_pb2.ListDatasetsRequest(),
                                                      retry=True).datasets]
        else:
            names = [dataset]
        runs = TrainingRuns()
        for name in names:
            response = self._rpc.invoke(self._stub.ListRuns,
                                        training_pb2.ListRunsRequest(dataset=name), retry=True)
            runs.extend(TrainingRun.from_message(r) for r in response.runs)
        return runs

    @staticmethod
    def _name(run, dataset):
        if isinstance(run, TrainingRun):
            return dataset or run.dataset, run.run
        return dataset or "", run
