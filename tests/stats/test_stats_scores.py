import json

import pytest

from stats.scores import UnitResult, rank, score_tree, unit_scores


def test_it_scores_lower_is_better_units_as_best_over_own():
    assert unit_scores({"a": 10.0, "b": 20.0, "c": None}) == {"a": 100.0, "b": 50.0}


def test_it_scores_higher_is_better_units_as_own_over_best():
    assert unit_scores({"a": 10.0, "b": 20.0}, lower_is_better=False) == {"a": 50.0, "b": 100.0}


def test_it_refuses_non_positive_values():
    with pytest.raises(ValueError, match="positive"):
        unit_scores({"a": 0.0, "b": 1.0})


def test_it_shares_the_better_rank_between_ties():
    assert rank({"a": 90, "b": 80, "c": 80, "d": 70}) == {"a": 1, "b": 2, "c": 2, "d": 4}


def test_it_ties_scores_that_differ_only_by_float_noise():
    assert rank({"a": (0.1 + 0.2) * 100, "b": 30.0}) == {"a": 1, "b": 1}


def _tree():
    return score_tree(
        [
            UnitResult("workload_time", "deepswe", "u1", {"A": 10.0, "B": 20.0, "C": None}),
            UnitResult("workload_time", "deepswe", "u2", {"A": 30.0, "B": None, "C": None}),
            UnitResult("workload_time", "deepswe", "u3", {"A": None, "B": None, "C": None}),
            UnitResult("workload_time", "ci", "job", {"A": 5.0, "B": 5.0}),
            UnitResult("machine_performance", "cpu", "cpu", {"B": 200.0, "A": 100.0}, False),
        ]
    )


def test_it_counts_a_missing_unit_as_zero_over_the_whole_unit_set():
    deepswe = _tree().child("workload_time").child("deepswe")
    # u3 has no result from anyone and is left out; B lacks u2 and gets 0 for it.
    assert deepswe.scores == {"A": 100.0, "B": pytest.approx(25.0)}
    assert deepswe.ranks == {"A": 1, "B": 2}


def test_it_averages_sections_and_the_overall_score_with_missing_children_as_zero():
    tree = _tree()
    time = tree.child("workload_time")
    assert time.scores == {"A": 100.0, "B": pytest.approx(62.5)}
    assert tree.child("machine_performance").scores == {"A": 50.0, "B": 100.0}
    # The overall score averages all four sections: the empty cost and operations sections add
    # 0 for everyone (the methodology's "averages four scores").
    assert tree.scores == {"A": pytest.approx(37.5), "B": pytest.approx(40.625)}
    assert tree.ranks == {"B": 1, "A": 2}


def test_it_gives_no_score_or_rank_to_a_provider_without_results():
    tree = _tree()
    assert "C" not in tree.scores and "C" not in tree.ranks
    assert tree.child("workload_cost").scores == {}


def test_it_keeps_the_four_sections_in_order_and_serializes():
    tree = _tree()
    assert [s.key for s in tree.children] == [
        "workload_time",
        "workload_cost",
        "sandbox_operations",
        "machine_performance",
    ]
    data = json.loads(json.dumps(tree.to_dict()))
    assert data["children"][0]["children"][0]["children"][0]["scores"]["A"] == 100.0


def test_it_refuses_an_unknown_section():
    with pytest.raises(ValueError, match="unknown section"):
        score_tree([UnitResult("speed", "x", "y", {"A": 1.0})])
