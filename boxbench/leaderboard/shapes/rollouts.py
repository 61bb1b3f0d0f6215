"""The shape of the RL board's projection of a million rollouts (boxbench.leaderboard.rollouts,
stats.rollouts)."""

from __future__ import annotations

from typing import TypedDict

from boxbench.leaderboard.shapes.provider import ProviderInfo


class Figure(TypedDict):
    value: float
    ci_low: float
    ci_high: float


class RolloutFigures(TypedDict):
    rollouts: int
    knee_tier: int
    episode_s: Figure
    knee_throughput_per_s: Figure
    sandbox_hours: Figure
    wall_hours: Figure
    cost_usd: Figure | None  # None: no provider price


class RolloutInputs(TypedDict):
    """Where each input is shown: this board, the Burst board's knee tier, the declaration."""

    rl_url: str
    knee_url: str  # "" without a knee
    pricing_url: str


class RolloutRow(ProviderInfo):
    missing: list[str]  # each input that is missing, in words; figures None when one of them is
    inputs: RolloutInputs
    figures: RolloutFigures | None


class RolloutProjection(TypedDict):
    rollouts: int
    formula: str
    burst_url: str  # "" without a Burst board
    rows: list[RolloutRow]
