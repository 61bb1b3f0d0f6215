"""Status labels shown instead of (or beside) a ranked bar, and the ranking floor
(docs/methodology.md, "Status labels")."""

import math
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any


class Label(StrEnum):
    NOT_RANKED = "Not Ranked"
    PROVIDER_FAILURES = "Provider Failures"
    NOT_OFFERED = "Not Offered"
    ACCOUNT_LIMIT = "Account Limit"
    NOT_SUPPORTED = "Not Supported"
    NOT_MEASURED = "Not Measured"
    NOT_DISPLAYED = "Not Displayed"


MEANINGS = {
    Label.NOT_RANKED: (
        "The workload is not ranked because it has not reached its declared number of "
        "successful trials."
    ),
    Label.PROVIDER_FAILURES: "The provider has failed trials that top-up rounds did not replace.",
    Label.NOT_OFFERED: "This option is not offered by the provider on its plan.",
    Label.ACCOUNT_LIMIT: "Above the concurrency limit of boxbench's account with this provider.",
    Label.NOT_SUPPORTED: (
        "boxbench does not run this benchmark on this provider yet: a capability it needs is not "
        "supported through boxbench's adapter for it, or a known fault holds the test back."
    ),
    Label.NOT_MEASURED: "No result was measured for this provider.",
    Label.NOT_DISPLAYED: (
        "The provider is left off this view: it has no result here, or it lacks an input the "
        "view needs, such as a provider-sourced cost."
    ),
}

# A benchmark that declares no floor needs all N = 20 of its requested successes; one home for the
# number, which the runner's definitions and the stored Benchmark row both default to.
DEFAULT_RANKING_FLOOR = 20
# The multi-unit workloads (DeepSWE, CI pipelines, RL rollouts, Terminal-Bench) declare 90 % of
# the successes requested before any top-up.
DEFAULT_FLOOR_FRACTION = Fraction(9, 10)


def declared_floor(
    requested_successes: int, fraction: Fraction | str = DEFAULT_FLOOR_FRACTION
) -> int:
    """The floor a benchmark declares: successes a provider needs before it is ranked,
    ceil(fraction x requested), exactly. A run's own floor follows from it (subset_floor).

    DeepSWE: 10 units x 20 trials = 200 requested, floor 180, counted across all units.
    """
    return math.ceil(Fraction(fraction) * requested_successes)


def subset_floor(declared: int, declared_units: int, units: int) -> int:
    """The floor of a run over `units` of a workload's `declared_units` units.

    The declared floor counts successes across all units; a run over a subset needs the same
    share of it per unit, exactly: ceil(declared x units / declared_units). It never counts
    fewer trials per unit than the benchmark declares, whatever the run asked for (DeepSWE: 180
    over 10 units, so 36 on 2 of them).
    """
    if declared_units <= 1 or units >= declared_units:
        return declared
    return math.ceil(Fraction(declared) * max(units, 1) / declared_units)


def failures_explain_shortfall(successes: int, failures: int, floor: int) -> bool:
    """Below the floor, the unreplaced failures explain the shortfall when the provider would
    have reached the floor had they succeeded."""
    return failures > 0 and successes + failures >= floor


@dataclass(frozen=True)
class ProviderState:
    """What is known about one provider on one benchmark (and view) when the page is built."""

    successes: int = 0  # successful trials, across all units for multi-unit workloads
    ranking_floor: int = 1
    unreplaced_provider_failures: int = 0
    refused_capability: str | None = None  # planner's refusal code or missing capability
    known_fault: str | None = None  # a known fault holds the test back
    not_offered: bool = False  # the option (size, region, feature) is not on the provider's plan
    account_limit: bool = False  # above the account's concurrency limit
    has_result_in_view: bool = True  # False when a filtered view holds none of its results
    view_needs_provider_cost: bool = False  # the All view of a multi-unit workload
    has_provider_cost: bool = False
    no_cost_reason: str = ""  # in reader words, why it has no provider-sourced cost


@dataclass(frozen=True)
class Status:
    label: Label | None  # None: a plain ranked bar
    ranked: bool
    meaning: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": None if self.label is None else str(self.label),
            "ranked": self.ranked,
            "meaning": self.meaning,
        }


def _status(label: Label | None, ranked: bool = False) -> Status:
    return Status(label, ranked, MEANINGS[label] if label else "")


def decide(state: ProviderState) -> Status:
    """The one label to show, by this precedence (first match wins):

    1. Not Supported, Not Offered, Account Limit: the benchmark never ran, say why.
    2. No successful trial: Provider Failures if failures were left unreplaced, else Not Measured.
    3. Not Displayed: the view holds none of its results, or needs a provider-sourced cost it lacks.
    4. Below the ranking floor: Provider Failures if unreplaced failures explain the shortfall
       (successes + unreplaced failures reach the floor), else Not Ranked.
    5. Ranked: a bar, labelled Provider Failures when unreplaced failures remain on the chart.
    """
    if state.known_fault:
        status = _status(Label.NOT_SUPPORTED)
        return Status(status.label, False, f"{status.meaning} Known fault: {state.known_fault}")
    if state.refused_capability:
        return _status(Label.NOT_SUPPORTED)
    if state.not_offered:
        return _status(Label.NOT_OFFERED)
    if state.account_limit:
        return _status(Label.ACCOUNT_LIMIT)
    failures = state.unreplaced_provider_failures > 0
    if state.successes == 0:
        return _status(Label.PROVIDER_FAILURES if failures else Label.NOT_MEASURED)
    if not state.has_result_in_view:
        return _status(Label.NOT_DISPLAYED)
    if state.view_needs_provider_cost and not state.has_provider_cost:
        status = _status(Label.NOT_DISPLAYED)
        if state.no_cost_reason:
            return Status(status.label, False, f"{state.no_cost_reason} {status.meaning}")
        return status
    if state.successes < state.ranking_floor:
        explained = failures_explain_shortfall(
            state.successes, state.unreplaced_provider_failures, state.ranking_floor
        )
        return _status(Label.PROVIDER_FAILURES if explained else Label.NOT_RANKED)
    return _status(Label.PROVIDER_FAILURES if failures else None, ranked=True)
