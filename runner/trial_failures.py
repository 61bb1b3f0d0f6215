"""How a trial's failed steps become its outcome: an adapter's error named and owned
(`adapter_failure`), a step cut short, the job host out of a resource, a create the procedure
made itself. The lifecycle (runner/lifecycle.py) raises them; procedures may too."""

from __future__ import annotations

from runner.benchmarks.base import BenchmarkError, ProviderFailure, TrialOutcome
from runner.outcomes import Outcome, Owner
from runner.providers.base import CredentialsRejected, ExecTimeout, ProviderError


class CreateFailed(ProviderFailure):
    """A create the procedure made itself (create_here) failed: `code` is the adapter's error
    code (`rate_limited`, ...), so the procedure can tell a limit's answer from a failure."""

    def __init__(self, cause: str, code: str = ""):
        super().__init__(cause)
        self.code = code


class JobHostFailure(TrialOutcome):
    """The job host ran out of a resource: not the benchmark's defect, so its unit goes on."""

    outcome, owner = Outcome.BENCHMARK_ERROR, Owner.ENVIRONMENT


class CutShort(TrialOutcome):
    """A step overran its limit: its outcome is unknown, which stops refilling.

    Stored as a provider failure with owner "unknown" and a cause starting "cut short: ", and
    distinguished from a failure whose owner alone is unknown by the Trial's `cut_short` column.
    """

    outcome, owner = Outcome.PROVIDER_FAILURE, Owner.UNKNOWN

    def __init__(self, cause: str):
        super().__init__(cause if cause.startswith(CUT_SHORT) else CUT_SHORT + cause)


CUT_SHORT = "cut short: "


def adapter_failure(operation: str, error: BaseException) -> TrialOutcome:
    """An adapter error as the trial's outcome, named: the provider's failure, whether expected
    or not, except a credential the provider refused, which is ours (a benchmark error; see
    CredentialsRejected). The one place that decides this owner, for every adapter."""
    if isinstance(error, ExecTimeout):
        return ProviderFailure(f"{operation}: a step hit its time limit: {error}")
    if isinstance(error, ProviderError):
        label, text = error.operation or operation, str(error)
        # Adapters often name the operation in the message already: say it once.
        cause = text if text.startswith(f"{label}: ") else f"{label}: {text}"
        owner = BenchmarkError if isinstance(error, CredentialsRejected) else ProviderFailure
        return owner(cause)
    return ProviderFailure(f"{operation}: the adapter raised {type(error).__name__}: {error}")
