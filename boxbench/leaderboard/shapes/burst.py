"""The shapes of what the Burst and Density boards show beside their tables
(boxbench.leaderboard.burst): the ready-count curves, the tier sweep, and each provider's
documented limits beside what was measured."""

from __future__ import annotations

from typing import TypedDict

from boxbench.leaderboard.shapes.provider import ProviderInfo


class ReadyCurve(ProviderInfo):
    """Mean ready sandboxes against ms from the burst's start (stats.burst.ready_curve)."""

    bursts: int
    ms: list[float]
    ready: list[float]


class TierPoint(TypedDict):
    tier: int
    label: str  # "" where measured; "Account Limit" above the declared concurrent sandboxes
    bursts: int  # successful bursts of the tier
    throughput_per_s: float | None  # median ready sandboxes per second
    p95_ready_ms: float | None  # median time until 95 % were ready
    requests: int
    rate_limited: int  # answered 429 or quota: counted apart from failures


class TierSweep(ProviderInfo):
    points: list[TierPoint]


class BurstCharts(TypedDict):
    default_tier: str  # the scored tier; the others are charted only
    curves: dict[str, list[ReadyCurve]]  # tier: a curve per provider
    sweep: list[TierSweep]


class DeclaredLimits(ProviderInfo):
    """A provider's documented limits (its declaration's `limits`), shown as published by the
    provider until measured, with what the density board measured beside them."""

    account_tier: str
    concurrent_sandboxes: int | None
    create_rate_per_s: float | None
    api_requests_per_s: float | None
    source: str
    date: str
    measured_sandboxes: float | None  # density: median sandboxes reached; None: not measured
    measured_refused: int  # density: trials that ended at the provider's refusal
    measured_trials: int
