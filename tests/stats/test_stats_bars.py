import math

import pytest

from stats import bars


def test_it_scales_segments_to_the_total_median_and_labels_real_medians():
    stages = {"read": [1, 2, 3], "write": [10, 20, 30]}
    bar = bars.stacked_bar([12, 21, 35], stages)
    assert bar.total_median == 21
    assert bar.scale == pytest.approx(21 / 22)
    read, write = bar.segments
    assert (read.stage, read.median, read.width) == ("read", 2, pytest.approx(2 * 21 / 22))
    assert write.median == 20 and write.width == pytest.approx(20 * 21 / 22)
    assert sum(s.width for s in bar.segments) == pytest.approx(bar.total_median)


def test_it_draws_no_width_when_every_stage_median_is_zero():
    bar = bars.stacked_bar([5, 6], {"read": [0, 0]})
    assert bar.scale == 0 and bar.segments[0].width == 0


def test_it_takes_each_stage_median_over_the_trials_that_recorded_it():
    assert bars.stage_medians({"install": [None, 4, 2, math.nan, 9]}) == {"install": 4}


def test_it_gives_stage_means():
    assert bars.stage_means({"read": [1, 2], "write": [3, 5]}) == {"read": 1.5, "write": 4.0}


def test_it_sums_a_derived_view_only_where_every_selected_component_is_valid():
    components = {"a": [1, 2, None, 4], "b": [10, math.nan, 30, 40], "c": [None] * 4}
    view = bars.derived_view(components, ["a", "b"])
    assert view.trials == 2
    assert view.median == 11  # lower median of the sums 11 and 44
    assert (view.tail, view.tail_label) == (44, "Slowest")
    assert "interval" not in view.to_dict()


def test_it_uses_p95_for_a_derived_view_from_20_complete_trials():
    view = bars.derived_view({"a": list(range(1, 21)), "b": [0] * 20}, ["a", "b"])
    assert (view.median, view.tail, view.tail_label) == (10, 19, "p95")
    higher = bars.derived_view({"a": list(range(1, 21))}, ["a"], lower_is_better=False)
    assert (higher.tail, higher.tail_label) == (1, "p5")


def test_it_returns_an_empty_view_when_no_trial_is_complete():
    view = bars.derived_view({"a": [1, None], "b": [None, 2]}, ["a", "b"])
    assert (view.trials, view.median, view.tail) == (0, None, None)


def test_it_refuses_unknown_or_misaligned_components():
    with pytest.raises(ValueError, match="unknown"):
        bars.derived_view({"a": [1]}, ["b"])
    with pytest.raises(ValueError, match="equal lengths"):
        bars.derived_view({"a": [1], "b": [1, 2]}, ["a", "b"])


# Stage cost: the shown cost (a mean) times each stage's share of the stage means -------------


def stages():
    # Stage means 2 and 20 (sum 22); their medians are the same, the total median 21 is not.
    return {"read": [1, 2, 3], "write": [10, 20, 30]}


def test_it_shares_the_shown_cost_by_each_stages_mean():
    cost = bars.stage_costs(stages(), 0.42)
    read, write = cost.segments
    assert (read.stage, read.cost) == ("read", pytest.approx(0.42 * 2 / 22))
    assert (write.stage, write.cost) == ("write", pytest.approx(0.42 * 20 / 22))
    assert [s.width for s in cost.segments] == [s.cost for s in cost.segments]
    assert math.fsum(s.cost for s in cost.segments) == pytest.approx(cost.total_cost) == 0.42


def test_the_share_is_the_mean_not_the_median():
    # A skewed stage: median 1, mean 4. Its share follows the mean, as the shown cost does.
    cost = bars.stage_costs({"read": [1, 1, 10], "test": [4, 4, 4]}, 1.0)
    assert [s.cost for s in cost.segments] == pytest.approx([0.5, 0.5])


def test_a_stage_missing_in_some_trials_takes_the_mean_of_those_that_recorded_it():
    cost = bars.stage_costs({"read": [2, None, math.nan], "test": [6, 6, 6]}, 1.0)
    assert [s.cost for s in cost.segments] == pytest.approx([0.25, 0.75])


@pytest.mark.parametrize("missing", [None, math.nan])
def test_there_is_no_stage_cost_without_a_shown_cost(missing):
    assert bars.stage_costs(stages(), missing) is None


def test_a_zero_cost_gives_every_stage_a_zero_cost():
    cost = bars.stage_costs(stages(), 0.0)
    assert cost.total_cost == 0
    assert [(s.stage, s.cost, s.width) for s in cost.segments] == [("read", 0, 0), ("write", 0, 0)]


def test_a_stage_whose_mean_is_zero_costs_nothing_and_the_others_keep_theirs():
    read, test = bars.stage_costs({"read": [0, 0, 0], "test": [10, 10, 10]}, 2.0).segments
    assert (read.cost, read.width) == (0, 0)
    assert (test.cost, test.width) == (2.0, 2.0)


def test_there_is_no_stage_cost_without_stages_to_share_it():
    assert bars.stage_costs({}, 1.0) is None
    assert bars.stage_costs({"read": [0, 0]}, 1.0) is None


@pytest.mark.parametrize("bad", [-0.01, math.inf])
def test_it_refuses_a_negative_or_infinite_cost(bad):
    with pytest.raises(ValueError, match="finite and at least 0"):
        bars.stage_costs(stages(), bad)


def test_a_cost_bar_serializes_its_segments():
    data = bars.stage_costs(stages(), 0.42).to_dict()
    assert data["total_cost"] == 0.42 and data["segments"][0]["stage"] == "read"
    assert set(data["segments"][0]) == {"stage", "cost", "width"}


def test_the_all_views_stage_costs_share_the_workload_cost_by_each_units_shares():
    # Unit shares 1/4 + 3/4 and 1/2 + 1/2: the mean shares 3/8 and 5/8 of a workload cost of 8.
    costs = bars.workload_stage_costs(8.0, [{"read": 1.0, "test": 3.0}, {"read": 5.0, "test": 5.0}])
    assert costs == pytest.approx({"read": 3.0, "test": 5.0})
    # A stage one unit lacks adds 0 share there; a unit with no cost is left out.
    costs = bars.workload_stage_costs(2.0, [{"read": 1.0}, {"read": 1.0, "build": 1.0}, {"x": 0}])
    assert costs == pytest.approx({"read": 1.5, "build": 0.5})
    assert bars.workload_stage_costs(None, [{"read": 1.0}]) is None
    assert bars.workload_stage_costs(1.0, []) is None
