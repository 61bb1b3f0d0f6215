import numpy as np
import pytest

from stats import estimators, summary
from stats.summary import Method, Samples


def samples(values, **kw):
    return Samples(values=np.array(values, dtype=float), **kw)


def test_it_summarizes_a_time_benchmark_with_its_interval_and_slowest_trial():
    row = summary.summarize(samples([5, 1, 3, 2, 4]), Method(measure_unit="ms"))
    assert row["n"] == 5
    assert row["median"] == 3  # nearest rank ceil(0.5 * 5) = 3rd of 1..5
    assert (row["tail"], row["tail_kind"]) == (5, "Slowest")  # under 20 trials: the worst
    assert row["mean"] == 3
    assert (row["ci_low"], row["ci_high"]) == estimators.bootstrap_median_ci([5, 1, 3, 2, 4])
    assert row["ci_low"] <= 3 <= row["ci_high"]
    assert row["distribution"] == {
        "min": 1,
        "p25": 2,
        "p50": 3,
        "p75": 4,
        "max": 5,
        "points": [1, 2, 3, 4, 5],
        "points_shown": 5,
    }
    assert (row["stage_medians"], row["segments"], row["scale"], row["derived"]) == (
        {},
        [],
        None,
        {},
    )


def test_it_gives_no_interval_to_a_non_time_unit_and_takes_the_lowest_as_tail():
    method = Method(lower_is_better=False, measure_unit="MB/s")
    row = summary.summarize(samples([40, 10, 30, 20]), method)
    assert row["median"] == 20  # nearest rank ceil(0.5 * 4) = 2nd of 10..40
    assert (row["ci_low"], row["ci_high"]) == (None, None)
    assert (row["tail"], row["tail_kind"]) == (10, "Lowest")


def test_it_takes_p95_once_there_are_twenty_trials():
    row = summary.summarize(samples(range(1, 21)), Method())
    assert (row["tail"], row["tail_kind"]) == (19, "p95")  # ceil(0.95 * 20) = 19th


def test_an_empty_cell_has_a_count_of_zero_and_no_statistics():
    row = summary.summarize(samples([]), Method(stages=("create",)))
    assert row["n"] == 0
    assert row["median"] is None and row["distribution"] is None and row["derived"] == {}


def test_it_pools_the_calls_of_every_trial():
    calls = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])]
    row = summary.summarize(
        Samples(values=np.array([2.0, 5.0]), calls=calls), Method(statistic=summary.POOLED)
    )
    assert row["n"] == 2  # trials, not calls
    assert row["median"] == 3  # ceil(0.5 * 6) = 3rd of the six pooled calls
    assert row["mean"] == 3.5
    # 2 trials < the 20-trial floor: the worst trial, its own lower median call (5), not the
    # slowest single call (6).
    assert (row["tail"], row["tail_kind"]) == (5, "Slowest")
    assert (row["ci_low"], row["ci_high"]) == estimators.pooled_bootstrap_median_ci(calls)


def test_it_averages_cost_only_when_every_trial_has_one():
    method = Method()
    full = samples([1, 2, 3], costs=np.array([0.1, 0.2, 0.3]))
    assert summary.summarize(full, method)["mean_cost_usd"] == pytest.approx(0.2)
    partial = samples([1, 2, 3], costs=np.array([0.1, np.nan, 0.3]))
    assert summary.summarize(partial, method)["mean_cost_usd"] is None


def test_it_builds_stage_segments_and_every_derived_view():
    stages = {
        "create": np.array([4.0, 8.0, 12.0]),
        "ready": np.array([6.0, 12.0, 18.0]),
        "cleanup": np.full(3, np.nan),  # declared, never recorded: no segment, no view
    }
    method = Method(stages=("create", "ready", "cleanup"))
    row = summary.summarize(samples([10, 20, 30], stages=stages), method)
    assert row["stage_medians"] == {"create": 8, "ready": 12}
    assert row["scale"] == 1.0  # total median 20 = 8 + 12
    assert row["segments"] == [
        {"stage": "create", "median": 8, "width": 8},
        {"stage": "ready", "median": 12, "width": 12},
    ]
    assert row["derived"] == {
        "create": {"trials": 3, "median": 8, "tail": 12, "tail_kind": "Slowest"},
        "ready": {"trials": 3, "median": 12, "tail": 18, "tail_kind": "Slowest"},
        "create+ready": {"trials": 3, "median": 20, "tail": 30, "tail_kind": "Slowest"},
    }


def test_it_shares_the_mean_cost_by_the_stage_bar():
    stages = {"read": np.array([2.0, 4.0, 6.0]), "test": np.array([6.0, 12.0, 18.0])}
    costs = np.array([0.1, 0.2, 0.6])  # mean cost per success 0.3
    row = summary.summarize(
        samples([10, 20, 30], stages=stages, costs=costs), Method(stages=("read", "test"))
    )
    # The shown cost is a mean, so the stage means share it: 4 and 12 (sum 16), so
    # 0.3 x 4/16 and 0.3 x 12/16, which fill 0.3 exactly (labels and widths alike).
    bar = row["stage_costs"]
    assert bar["total_cost"] == pytest.approx(0.3) and "scale" not in bar
    assert [s["stage"] for s in bar["segments"]] == ["read", "test"]
    assert [s["cost"] for s in bar["segments"]] == pytest.approx([0.075, 0.225])
    assert [s["width"] for s in bar["segments"]] == pytest.approx([0.075, 0.225])


def test_there_are_no_stage_costs_without_a_cost_or_stages():
    stages = {"read": np.array([2.0, 4.0])}
    without_cost = samples([10, 20], stages=stages, costs=np.array([0.1, np.nan]))
    assert summary.summarize(without_cost, Method(stages=("read",)))["stage_costs"] is None
    without_stages = samples([10, 20], costs=np.array([0.1, 0.2]))
    assert summary.summarize(without_stages, Method())["stage_costs"] is None
    assert summary.summarize(samples([]), Method())["stage_costs"] is None


def test_it_skips_derived_views_beyond_the_stage_cap():
    names = [f"s{i}" for i in range(summary.MAX_DERIVED_STAGES + 1)]
    stages = {s: np.array([1.0, 2.0]) for s in names}
    row = summary.summarize(samples([9, 18], stages=stages), Method(stages=names))
    assert len(row["segments"]) == len(names) and row["derived"] == {}
    assert not summary.derived_available(names)
    assert summary.derived_available(names[:-1]) and not summary.derived_available([])


def test_it_caps_the_distribution_points_at_evenly_spaced_ranks():
    dist = summary.distribution(np.arange(1000, dtype=float)[::-1])
    assert dist["points_shown"] == summary.MAX_POINTS == len(dist["points"])
    assert (dist["points"][0], dist["points"][-1]) == (0, 999)
    assert dist["points"] == sorted(dist["points"])
    assert (dist["min"], dist["p50"], dist["max"]) == (0, 499, 999)  # ceil(0.5 * 1000) = 500th


def test_it_ranks_rows_with_shared_ranks_and_orders_the_table():
    rows = [
        {"provider": "e", "ranked": True, "median": None},
        {"provider": "d", "ranked": False, "median": 0.5},
        {"provider": "c", "ranked": True, "median": 3.0},
        {"provider": "b", "ranked": True, "median": 1.0},
        {"provider": "a", "ranked": True, "median": 1.0},
    ]
    summary.rank_rows(rows, "median", lower=True)
    assert [(r["provider"], r["rank"], r["ranked"]) for r in rows] == [
        ("a", 1, True),
        ("b", 1, True),
        ("c", 3, True),
        ("d", None, False),
        ("e", None, False),
    ]


def test_higher_is_better_ranks_the_largest_first():
    rows = [{"provider": p, "ranked": True, "v": v} for p, v in (("x", 10.0), ("y", 30.0))]
    summary.rank_rows(rows, "v", lower=False)
    assert [(r["provider"], r["rank"]) for r in rows] == [("y", 1), ("x", 2)]


def test_derived_keys_join_the_stages_in_bar_order():
    assert summary.derived_key(("create", "ready")) == "create+ready"


@pytest.mark.parametrize("value", [None, float("nan"), float("inf")])
def test_non_finite_values_become_none(value):
    assert summary.finite_or_none(value) is None


@pytest.mark.parametrize(
    ("values", "calls", "method"),
    [
        ([5, 1, 3, 2, 4, 9, 7], [], Method(measure_unit="ms")),
        ([1200, 1180, 1250], [], Method(lower_is_better=False, measure_unit="events/s")),
        ([2.0, 5.0, 3.0], [[1.0, 2.0, 9.0], [5.0, 6.0], [3.0]], Method(statistic=summary.POOLED)),
        ([], [], Method(measure_unit="ms")),
    ],
)
def test_a_history_points_center_is_the_summarys(values, calls, method):
    # History points of earlier runs use center() alone: it must give the board's numbers.
    cell = Samples(values=np.array(values, dtype=float), calls=[np.array(c) for c in calls])
    row = summary.summarize(cell, method)
    assert summary.center(cell, method) == {k: row[k] for k in ("n", "median", "ci_low", "ci_high")}
