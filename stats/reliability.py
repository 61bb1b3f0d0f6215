"""Provider failure rates per operation (docs/methodology.md, "Reliability").

Every finished trial of a published run is an attempt at each operation its benchmark performs
up to the step that failed; a burst's requests are each an attempt at create, readiness and
destroy. A failed attempt is placed on its operation and given a cause class by the words of its
cause, which stays private: only the counts leave this module. The failure rate is the
provider's own failures (owner provider, or unknown: a step cut short) over every attempt, with
a 95 % Wilson interval; too few attempts and the rate is Not Measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runner.outcomes import Owner

OPERATIONS = (
    "create",
    "readiness",
    "command",
    "snapshot",
    "restore",
    "fork",
    "transfer",
    "destroy",
)
CAUSE_CLASSES = ("rate_limited", "timeout", "stuck", "transport", "server_error", "other")
# Owners whose failures are the provider's: "unknown" is a step that overran its limit.
PROVIDER_OWNERS = ("provider", "unknown")
OWNERS = ("provider", "unknown", "benchmark", "environment")
# Below this many attempts a rate is Not Measured: one failure in ten would read as 10 %.
MIN_ATTEMPTS = 20
NOT_MEASURED = "Not Measured"
# Outcomes that are not attempts at an operation: a trace that does not replay here, and a
# trial an environment check skipped before it started.
NOT_ATTEMPTS = ("excluded", "missed")
# The density benchmark creates until the provider refuses: its refusal is its measurement.
NOT_COUNTED_BENCHMARKS = ("density",)
CUT_SHORT = "cut short: "

# The first operation whose words open the cause (after "cut short: "), checked in order.
_OPERATION_WORDS = (
    ("destroy", re.compile(r"^(destroy|cleanup not verified|could not be deleted|delete)")),
    ("readiness", re.compile(r"^readiness")),
    ("restore", re.compile(r"^restore")),
    ("fork", re.compile(r"^fork")),
    ("snapshot", re.compile(r"^snapshot")),
    ("create", re.compile(r"^create")),
    ("transfer", re.compile(r"^(upload|download|transfer)")),
)
# The first class whose words appear anywhere in the cause, checked in order.
_CLASS_WORDS = (
    ("rate_limited", re.compile(r"rate.?limit|\b429\b|too many requests|quota", re.I)),
    (
        "stuck",
        re.compile(
            r"stuck|still exists|not-ready answers|never became ready|could not be deleted"
            r"|still running|cleanup not verified",
            re.I,
        ),
    ),
    ("timeout", re.compile(r"time limit|timed? ?out|overran|deadline|cut short", re.I)),
    (
        "server_error",
        re.compile(r"\b5\d\d\b|server error|internal error|unavailable|bad gateway", re.I),
    ),
    (
        "transport",
        re.compile(
            r"connect|reset|refused|unreachable|broken pipe|\beof\b|transport|stopped answering",
            re.I,
        ),
    ),
)


@dataclass(frozen=True)
class Attempt:
    operation: str
    owner: str = Owner.NONE  # when the attempt succeeded
    cause_class: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.owner)


def operations_of(capabilities: Iterable[str]) -> tuple[str, ...]:
    """The operations a trial of a benchmark with these capabilities performs, in the order of
    its lifecycle: create and readiness, the procedure's own, and destroy at cleanup."""
    found = set(capabilities)
    extra = {
        "snapshot": ("snapshot", "restore"),
        "fork": ("fork",),
        "file_transfer": ("transfer",),
    }
    ops = ["create", "readiness", "command"]
    for capability, named in extra.items():
        if capability in found:
            ops += named
    return (*ops, "destroy")


def failed_operation(cause: str) -> str:
    """The operation a failed trial's cause names; a step of the procedure (a command) when it
    names none."""
    text = cause.strip()
    if text.startswith(CUT_SHORT):
        text = text[len(CUT_SHORT) :]
        if "destroy" in text:
            return "destroy"
    for operation, words in _OPERATION_WORDS:
        if words.match(text):
            return operation
    return "command"


def cause_class(cause: str) -> str:
    """The class of a failure's cause: the first of CAUSE_CLASSES whose words it holds."""
    for name, words in _CLASS_WORDS:
        if words.search(cause):
            return name
    return "other"


def trial_attempts(
    operations: Sequence[str], outcome: str, owner: str, cause: str
) -> list[Attempt]:
    """A trial's attempts: each operation up to the failed one succeeded, the failed one failed,
    the later ones were never tried, except destroy, which cleanup always attempts once a
    sandbox exists."""
    if outcome in NOT_ATTEMPTS:
        return []
    if outcome == "success":
        return [Attempt(op) for op in operations]
    failed = failed_operation(cause)
    ops = list(operations) if failed in operations else [*operations[:-1], failed, "destroy"]
    at = ops.index(failed)
    found = [Attempt(op) for op in ops[:at]]
    found.append(Attempt(failed, owner or Owner.UNKNOWN, cause_class(cause)))
    if failed != "destroy" and failed != "create":
        found.append(Attempt("destroy"))
    return found


def request_attempts(request: dict) -> list[Attempt]:
    """One burst request's attempts (runner/benchmarks/burst.py): create, then readiness once
    created, then destroy; its failures are the provider's."""
    outcome, cause = request.get("outcome", ""), request.get("cause", "")
    created = request.get("created_ms") is not None
    ready = request.get("ready_ms") is not None
    if outcome == "ok":
        return [Attempt("create"), Attempt("readiness"), Attempt("destroy")]
    if not created:
        cls = "rate_limited" if outcome == "rate_limited" else _request_class(outcome, cause)
        return [Attempt("create", Owner.PROVIDER, cls)]
    if cause.startswith("could not be deleted"):
        readiness = Attempt("readiness") if ready else None
        rest = [readiness] if readiness else []
        return [Attempt("create"), *rest, Attempt("destroy", Owner.PROVIDER, cause_class(cause))]
    return [
        Attempt("create"),
        Attempt("readiness", Owner.PROVIDER, _request_class(outcome, cause)),
        Attempt("destroy"),
    ]


def _request_class(outcome: str, cause: str) -> str:
    if outcome in ("timeout", "stuck"):
        return outcome
    return cause_class(cause)


def tally(attempts: Iterable[Attempt], times: int = 1) -> dict[str, dict]:
    """{operation: {"attempts": n, "failures": {owner: {class: n}}}} of these attempts, each
    counted `times` (the attempts of that many trials that went alike)."""
    out: dict[str, dict] = {}
    for attempt in attempts:
        entry = out.setdefault(attempt.operation, {"attempts": 0, "failures": {}})
        entry["attempts"] += times
        if attempt.failed:
            by_class = entry["failures"].setdefault(attempt.owner, {})
            by_class[attempt.cause_class] = by_class.get(attempt.cause_class, 0) + times
    return out


def merge(tallies: Iterable[dict[str, dict]]) -> dict[str, dict]:
    """Several tallies added up, operation by operation."""
    out: dict[str, dict] = {}
    for one in tallies:
        for operation, entry in one.items():
            into = out.setdefault(operation, {"attempts": 0, "failures": {}})
            into["attempts"] += entry["attempts"]
            for owner, by_class in entry["failures"].items():
                target = into["failures"].setdefault(owner, {})
                for cls, n in by_class.items():
                    target[cls] = target.get(cls, 0) + n
    return out


def wilson(failures: int, attempts: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of failures / attempts (no continuity correction)."""
    if attempts < 1 or not 0 <= failures <= attempts:
        raise ValueError(f"{failures} failures of {attempts} attempts is not a proportion")
    # Imported here: the raw-data format reads this module's names, and statsmodels takes
    # seconds to import, which `bench import` and `bench export` would pay for nothing.
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(failures, attempts, alpha=0.05, method="wilson")
    return max(0.0, float(low)), min(1.0, float(high))


def rate(entry: dict, floor: int = MIN_ATTEMPTS) -> dict:
    """One operation's figures from its tally entry: attempts, the provider's failures and their
    rate with its interval (None, and the Not Measured label, below `floor` attempts), failures
    by owner and by cause class."""
    attempts = entry["attempts"]
    by_owner = {owner: sum(c.values()) for owner, c in entry["failures"].items()}
    by_class = {cls: 0 for cls in CAUSE_CLASSES}
    for classes in entry["failures"].values():
        for cls, n in classes.items():
            by_class[cls] = by_class.get(cls, 0) + n
    failures = sum(by_owner.get(owner, 0) for owner in PROVIDER_OWNERS)
    measured = attempts >= floor
    low, high = wilson(failures, attempts) if measured else (None, None)
    return {
        "attempts": attempts,
        "failures": failures,
        "rate": failures / attempts if measured else None,
        "ci_low": low,
        "ci_high": high,
        "label": "" if measured else NOT_MEASURED,
        "by_owner": {owner: by_owner.get(owner, 0) for owner in OWNERS},
        "by_class": by_class,
    }


def overall(tallied: dict[str, dict], floor: int = MIN_ATTEMPTS) -> dict:
    """Every operation's attempts together: a provider's one failure rate (an attempt is one
    operation, so a trial that creates, runs and destroys counts three)."""
    return rate(merge([{"all": e} for e in tallied.values()]).get("all", _EMPTY), floor)


_EMPTY = {"attempts": 0, "failures": {}}
