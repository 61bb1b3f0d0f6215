"""The shape of the Reliability page (boxbench.leaderboard.reliability): failure rates per
provider and operation over every attempt of the published runs, counts only."""

from __future__ import annotations

from typing import TypedDict

from boxbench.leaderboard.shapes.provider import ProviderInfo


class FailureRate(TypedDict):
    """One provider on one operation, or on all of them (stats.reliability.rate)."""

    attempts: int
    failures: int  # the provider's own (owner provider or unknown)
    rate: float | None  # None below the floor of attempts: the label says Not Measured
    ci_low: float | None  # 95 % Wilson interval
    ci_high: float | None
    label: str  # "" or "Not Measured"
    by_owner: dict[str, int]  # failed attempts by owner, ours included
    by_class: dict[str, int]  # failed attempts by cause class, every owner


class ProviderFailures(TypedDict):
    overall: FailureRate
    operations: dict[str, FailureRate]  # operation: its rate, for the operations attempted


class RunFailures(ProviderFailures):
    """One published run's attempts on the provider: a point of its history."""

    run: str
    run_name: str
    published_at: str


class ProviderReliability(ProviderInfo, ProviderFailures):
    unplaced: int  # failures an imported public file gives only as counts: on no operation
    history: list[RunFailures]  # newest run first


class ReliabilityPage(TypedDict):
    floor: int  # attempts below which a rate is Not Measured
    operations: list[str]
    owners: list[str]
    cause_classes: list[str]
    runs: int  # published runs counted
    providers: list[ProviderReliability]
