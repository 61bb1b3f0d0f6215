import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats import workload


def test_it_takes_the_geometric_mean_over_the_unit_set():
    values = workload.workload_values({"p1": {"a": 1, "b": 4, "c": 2}, "p2": {"a": 2, "c": 8}})
    assert values["p1"].value == pytest.approx(2.0)
    assert values["p1"].units == 3
    assert values["p1"].substitutions == []


def test_it_substitutes_the_slowest_time_on_a_missing_unit_with_a_note():
    values = workload.workload_values(
        {"p1": {"a": 1, "b": 4, "c": 2}, "p2": {"a": 2, "b": None, "c": 8}, "p3": {"b": 3}}
    )
    p2 = values["p2"]
    assert p2.value == pytest.approx(4.0)  # (2 x 4 x 8) ** (1/3), b filled with the slowest 4
    [sub] = p2.substitutions
    assert (sub.unit, sub.value) == ("b", 4)
    assert "b" in sub.note and "slowest time" in sub.note
    assert values["p3"].value == pytest.approx((2 * 3 * 8) ** (1 / 3))


def test_it_says_highest_cost_for_cost_substitutions():
    values = workload.workload_values({"p1": {"a": 1.0, "b": 3.0}, "p2": {"a": 2.0}}, kind="cost")
    assert "highest cost" in values["p2"].substitutions[0].note


def test_it_gives_no_value_to_a_provider_without_a_completed_unit():
    values = workload.workload_values({"p1": {"a": 1}, "p2": {"a": None}, "p3": {}})
    assert values["p2"].value is None
    assert values["p3"].value is None


def test_it_leaves_units_nobody_completed_out_of_the_unit_set():
    values = workload.workload_values({"p1": {"a": 4, "b": None}, "p2": {"a": 9, "b": math.nan}})
    assert workload.unit_set({"p1": {"a": 4, "b": None}}) == ["a"]
    assert values["p1"].value == 4 and values["p1"].units == 1


def test_it_refuses_zero_or_negative_values():
    with pytest.raises(ValueError, match="positive"):
        workload.workload_values({"p1": {"a": 0.0}, "p2": {"a": 1.0}})
    with pytest.raises(ValueError, match="positive"):
        workload.composite([1.0, -2.0])


def test_it_builds_composites_as_a_second_geometric_mean():
    assert workload.composite([2.0, 8.0]) == pytest.approx(4.0)
    out = workload.composites({"p1": {"w1": 2.0, "w2": 8.0}, "p2": {"w1": 3.0, "w2": None}})
    assert out == {"p1": pytest.approx(4.0), "p2": None}


def test_it_serializes_a_workload_value():
    values = workload.workload_values({"p1": {"a": 1.0, "b": 2.0}, "p2": {"a": 2.0}})
    assert values["p2"].to_dict()["substitutions"][0]["unit"] == "b"


@settings(deadline=None)
@given(st.lists(st.floats(min_value=1e-3, max_value=1e6), min_size=1, max_size=20))
def test_it_agrees_with_the_log_mean_definition(values):
    expected = math.exp(np.mean(np.log(values)))
    assert workload.positive_gmean(values) == pytest.approx(expected, rel=1e-9)
