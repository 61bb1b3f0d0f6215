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
