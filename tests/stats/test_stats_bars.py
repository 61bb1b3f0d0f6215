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


# Stage cost: the shown cost times each stage's share of the Time bar ---------------------------


def time_bar():
    # Stage medians 2 and 20 (sum 22) under a total median of 21: the Time bar's scale is 21 / 22.
    return bars.stacked_bar([12, 21, 35], {"read": [1, 2, 3], "write": [10, 20, 30]})


def test_it_shares_the_shown_cost_by_each_stages_part_of_the_time_bar():
    cost = bars.stage_costs(time_bar(), 0.42)
    read, write = cost.segments
    # Labels: the stage's unscaled share of the total median, as Time labels its real medians.
    assert (read.stage, read.cost) == ("read", pytest.approx(0.42 * 2 / 21))
    assert (write.stage, write.cost) == ("write", pytest.approx(0.42 * 20 / 21))
    # Widths: scaled by the Time bar's own scale, so the segments fill the shown cost.
    assert cost.scale == pytest.approx(21 / 22)
    assert read.width == pytest.approx(0.42 * 2 / 22) and write.width == pytest.approx(
        0.42 * 20 / 22
    )
    assert sum(s.width for s in cost.segments) == pytest.approx(cost.total_cost) == 0.42


def test_stage_costs_are_the_time_bar_in_cost_units():
    bar = time_bar()
    cost = bars.stage_costs(bar, 3.0)
    for time, money in zip(bar.segments, cost.segments, strict=True):
        assert money.cost == pytest.approx(time.median * 3.0 / bar.total_median)
        assert money.width == pytest.approx(time.width * 3.0 / bar.total_median)


def test_stage_costs_match_the_bar_when_stage_medians_add_up_to_the_total():
    bar = bars.stacked_bar([10, 20, 30], {"read": [4, 8, 12], "write": [6, 12, 18]})
    cost = bars.stage_costs(bar, 1.0)
    assert cost.scale == 1.0
    assert [s.cost for s in cost.segments] == pytest.approx([0.4, 0.6])
    assert [s.width for s in cost.segments] == [s.cost for s in cost.segments]


@pytest.mark.parametrize("missing", [None, math.nan])
def test_there_is_no_stage_cost_without_a_shown_cost(missing):
    assert bars.stage_costs(time_bar(), missing) is None


def test_a_zero_cost_gives_every_stage_a_zero_cost():
    cost = bars.stage_costs(time_bar(), 0.0)
    assert cost.total_cost == 0
    assert [(s.stage, s.cost, s.width) for s in cost.segments] == [("read", 0, 0), ("write", 0, 0)]


def test_a_stage_whose_share_is_zero_costs_nothing_and_the_others_keep_theirs():
    bar = bars.stacked_bar([10, 10, 10], {"read": [0, 0, 0], "test": [10, 10, 10]})
    read, test = bars.stage_costs(bar, 2.0).segments
    assert (read.cost, read.width) == (0, 0)
    assert (test.cost, test.width) == (2.0, 2.0)


def test_only_the_stages_the_bar_holds_get_a_cost():
    bar = bars.stacked_bar([10, 20], {"read": [4, 6]})  # no other stage was recorded
    cost = bars.stage_costs(bar, 1.0)
    assert [s.stage for s in cost.segments] == ["read"]
    assert cost.segments[0].cost == pytest.approx(0.4)  # 4 of the total median 10
    assert cost.segments[0].width == pytest.approx(1.0)  # the one segment fills the bar


def test_there_is_no_stage_cost_without_a_time_bar_to_share_it():
    assert bars.stage_costs(bars.StackedBar(10.0, 0.0, []), 1.0) is None
    assert bars.stage_costs(bars.stacked_bar([0, 0], {"read": [0, 0]}), 1.0) is None


@pytest.mark.parametrize("bad", [-0.01, math.inf])
def test_it_refuses_a_negative_or_infinite_cost(bad):
    with pytest.raises(ValueError, match="finite and at least 0"):
        bars.stage_costs(time_bar(), bad)


def test_a_cost_bar_serializes_its_segments():
    data = bars.stage_costs(time_bar(), 0.42).to_dict()
    assert data["total_cost"] == 0.42 and data["segments"][0]["stage"] == "read"
    assert set(data["segments"][0]) == {"stage", "cost", "width"}
