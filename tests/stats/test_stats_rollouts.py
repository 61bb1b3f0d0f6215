"""What a million RL rollouts would take (stats/rollouts.py)."""

import math

import pytest

from stats import estimators
from stats.rollouts import knee_tier, project


def test_the_knee_is_the_tier_of_highest_median_throughput_and_the_smaller_on_a_tie():
    assert knee_tier({1: [1.0, 1.2, 0.9], 8: [6.0, 7.0, 5.0], 32: [4.0, 4.5, 3.9]}) == 8
    assert knee_tier({32: [6.0], 8: [6.0], 100: [2.0]}) == 8
    assert knee_tier({1: [], 8: []}) is None
    assert knee_tier({}) is None


def test_creates_bind_the_wall_time_when_they_are_slower_than_the_sandboxes_free_up():
    # Units of 2 s and 8 s: the episode is their geometric mean, 4 s. At the 8-tier, 8 copies
    # held 4 s would finish 2 rollouts a second, but the burst board makes only 1 ready a second.
    found = project(
        {"a": [2000.0] * 5, "b": [8000.0] * 5},
        knee=8,
        knee_throughput_per_s=[1.0] * 5,
        cost_of=lambda seconds: seconds * 0.001,
    )
    assert found["episode_s"]["value"] == pytest.approx(4.0)
    assert found["sandbox_hours"]["value"] == pytest.approx(1_000_000 * 4 / 3600)
    assert found["wall_hours"]["value"] == pytest.approx(1_000_000 / 1.0 / 3600)
    assert found["cost_usd"]["value"] == pytest.approx(4000.0)
    # Identical trials leave nothing to resample: each interval is the value itself.
    for name in ("episode_s", "sandbox_hours", "wall_hours", "cost_usd"):
        figure = found[name]
        assert figure["ci_low"] == pytest.approx(figure["value"])
        assert figure["ci_high"] == pytest.approx(figure["value"])


def test_concurrency_binds_the_wall_time_when_creates_are_fast():
    found = project({"a": [4000.0] * 3}, knee=8, knee_throughput_per_s=[10.0] * 3, cost_of=None)
    assert found["wall_hours"]["value"] == pytest.approx(1_000_000 / 2.0 / 3600)
    assert found["cost_usd"] is None


def test_the_intervals_are_the_bootstrap_intervals_carried_through_the_formula():
    episodes = [3100.0, 2900.0, 4000.0, 3500.0, 3300.0, 5200.0, 3000.0, 3400.0]
    throughput = [2.0, 2.5, 1.5, 2.2, 1.9]
    found = project({"a": episodes}, knee=32, knee_throughput_per_s=throughput, cost_of=None)
    low, high = estimators.bootstrap_median_ci(episodes)
    assert found["episode_s"]["ci_low"] == pytest.approx(low / 1000)
    assert found["episode_s"]["ci_high"] == pytest.approx(high / 1000)
    assert found["sandbox_hours"]["ci_low"] == pytest.approx(low / 1000 * 1_000_000 / 3600)
    assert found["sandbox_hours"]["ci_high"] == pytest.approx(high / 1000 * 1_000_000 / 3600)
    # Creates bind here (32 copies of ~3.4 s would free ~9 a second), so the wall time's
    # interval is that of the throughput, turned upside down.
    t_low, t_high = estimators.bootstrap_median_ci(throughput)
    assert found["wall_hours"]["ci_low"] == pytest.approx(1_000_000 / t_high / 3600)
    assert found["wall_hours"]["ci_high"] == pytest.approx(1_000_000 / t_low / 3600)
    wall = found["wall_hours"]
    assert wall["ci_low"] < wall["value"] < wall["ci_high"]


def test_billing_rules_apply_to_each_draw_and_a_missing_price_gives_no_cost():
    # A one-minute minimum bills every rollout 60 s, whatever its episode time.
    minimum = project(
        {"a": [3000.0, 5000.0, 4000.0]},
        knee=1,
        knee_throughput_per_s=[1.0],
        cost_of=lambda seconds: max(seconds, 60.0) * 0.0001,
    )
    assert minimum["cost_usd"]["value"] == pytest.approx(6000.0)
    assert minimum["cost_usd"]["ci_low"] == pytest.approx(6000.0)
    unpriced = project({"a": [3000.0]}, knee=1, knee_throughput_per_s=[1.0], cost_of=lambda s: None)
    assert unpriced["cost_usd"] is None


@pytest.mark.parametrize(
    ("episodes", "knee", "throughput", "message"),
    [
        ({}, 8, [1.0], "at least one unit"),
        ({"lz4": []}, 8, [1.0], "episode_ms of lz4 is empty"),
        ({"lz4": [math.nan]}, 8, [1.0], "episode_ms of lz4 contains NaN"),
        ({"lz4": [0.0]}, 8, [1.0], "episode_ms of lz4 must be positive"),
        ({"lz4": [10.0]}, 0, [1.0], "positive tier"),
        ({"lz4": [10.0]}, 8, [], "throughput at the knee is empty"),
        ({"lz4": [10.0]}, 8, [-1.0], "throughput at the knee must be positive"),
    ],
)
def test_input_that_cannot_be_projected_is_refused_naming_what(episodes, knee, throughput, message):
    with pytest.raises(ValueError, match=message):
        project(episodes, knee=knee, knee_throughput_per_s=throughput, cost_of=None)
