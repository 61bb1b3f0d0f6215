from fractions import Fraction

import pytest

from stats.labels import MEANINGS, Label, ProviderState, decide, declared_floor, subset_floor

FLOOR = declared_floor(200)


def test_it_sets_the_deepswe_floor_at_180_of_200():
    assert FLOOR == 180
    assert declared_floor(21, Fraction(9, 10)) == 19  # ceil(18.9)


def test_it_has_seven_labels_each_with_its_meaning():
    assert len(Label) == 7 and set(MEANINGS) == set(Label)


@pytest.mark.parametrize(
    "state, label, ranked",
    [
        (ProviderState(successes=200, ranking_floor=FLOOR), None, True),
        (ProviderState(successes=180, ranking_floor=FLOOR), None, True),
        (ProviderState(successes=179, ranking_floor=FLOOR), Label.NOT_RANKED, False),
        (
            ProviderState(successes=170, ranking_floor=FLOOR, unreplaced_provider_failures=10),
            Label.PROVIDER_FAILURES,
            False,
        ),
        # Three failures cannot explain a shortfall of ten: Not Ranked.
        (
            ProviderState(successes=170, ranking_floor=FLOOR, unreplaced_provider_failures=3),
            Label.NOT_RANKED,
            False,
        ),
        (
            ProviderState(successes=195, ranking_floor=FLOOR, unreplaced_provider_failures=2),
            Label.PROVIDER_FAILURES,
            True,
        ),
        (ProviderState(refused_capability="missing:fork"), Label.NOT_SUPPORTED, False),
        (ProviderState(known_fault="issue 12"), Label.NOT_SUPPORTED, False),
        (ProviderState(not_offered=True), Label.NOT_OFFERED, False),
        (ProviderState(account_limit=True), Label.ACCOUNT_LIMIT, False),
        (ProviderState(), Label.NOT_MEASURED, False),
        (ProviderState(unreplaced_provider_failures=5), Label.PROVIDER_FAILURES, False),
        (ProviderState(successes=200, has_result_in_view=False), Label.NOT_DISPLAYED, False),
        (
            ProviderState(successes=200, ranking_floor=FLOOR, view_needs_provider_cost=True),
            Label.NOT_DISPLAYED,
            False,
        ),
        (
            ProviderState(
                successes=200,
                ranking_floor=FLOOR,
                view_needs_provider_cost=True,
                has_provider_cost=True,
            ),
            None,
            True,
        ),
    ],
)
def test_it_decides_each_label(state, label, ranked):
    status = decide(state)
    assert (status.label, status.ranked) == (label, ranked)
    expected = MEANINGS[label] if label else ""
    if state.known_fault:  # the fault's note follows the label's meaning
        expected += f" Known fault: {state.known_fault}"
    assert status.meaning == expected


def test_it_lets_not_supported_win_over_everything_else():
    state = ProviderState(refused_capability="x", not_offered=True, account_limit=True)
    assert decide(state).label is Label.NOT_SUPPORTED
    assert decide(ProviderState(not_offered=True, account_limit=True)).label is Label.NOT_OFFERED


def test_it_serializes_a_status_with_the_display_text():
    data = decide(ProviderState(account_limit=True)).to_dict()
    assert data == {"label": "Account Limit", "ranked": False, "meaning": MEANINGS["Account Limit"]}


@pytest.mark.parametrize(
    ("declared", "units", "planned", "floor"),
    [
        (180, 10, 10, 180),
        (180, 10, 2, 36),
        (180, 10, 1, 18),
        (40, 3, 2, 27),
        (20, 1, 1, 20),
        (180, 10, 12, 180),
    ],
)
def test_a_subset_of_units_needs_the_declared_share_of_the_floor(declared, units, planned, floor):
    assert subset_floor(declared, units, planned) == floor
