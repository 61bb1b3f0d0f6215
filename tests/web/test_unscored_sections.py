"""A section nobody scored is drawn as such on the overview, with why, and the Overall says how
many sections it averages; the Overall keeps the methodology's mean of four sections, an
unscored one adding 0 (boxbench/leaderboard/unscored.py)."""

import pytest

from boxbench.leaderboard import unscored
from boxbench.models import Aggregate, Provider, Scope
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


def node(key, scores, children=()):
    return {
        "key": key,
        "level": "section",
        "label": key.title(),
        "scores": scores,
        "ranks": {},
        "children": list(children),
    }


def test_the_words_name_each_unscored_section_and_why():
    tree = {
        **node("overall", {"a": 60.0}),
        "children": [
            node("workload_time", {"a": 100.0}, [node("deepswe", {"a": 100.0})]),
            node("workload_cost", {}, [node("deepswe", {})]),
            node("sandbox_operations", {"a": 80.0}, [node("create", {"a": 80.0})]),
            node("machine_performance", {}),
        ],
    }
    notes = unscored.section_notes(tree)
    assert notes["unscored"] == {
        "workload_cost": "not scored: no provider has a provider-sourced cost on a workload "
        "(a self-hosted provider has no provider price)",
        "machine_performance": "not scored: no benchmark of this section is published",
    }
    assert notes["overall"] == (
        "mean of 4 sections, 2 of them scored: Workload_Cost, Machine_Performance nobody scored, "
        "so it adds 0 for every provider (at most 50 of 100)"
    )
    scored = {**tree, "children": [c for c in tree["children"] if c["scores"]]}
    assert unscored.section_notes(scored) == {"unscored": {}, "overall": "mean of all 4 sections"}


def test_the_overview_draws_the_unscored_cost_section_and_says_what_the_overall_averages(
    client, imported_run
):
    Provider.objects.update(pricing={})  # nobody has a provider-sourced cost
    explain_failures(imported_run)
    from boxbench import publishing

    publishing.publish(imported_run)
    tree = Aggregate.objects.page(Scope.OVERVIEW)["tree"]
    cost = next(c for c in tree["children"] if c["key"] == "workload_cost")
    assert cost["scores"] == {}  # the computation is unchanged: nobody has a cost score
    sections = [c["scores"] for c in tree["children"]]
    for provider, overall in tree["scores"].items():  # the mean of four, the unscored one 0
        assert overall == pytest.approx(sum(s.get(provider, 0) for s in sections) / 4)
    page = client.get("/").content.decode()
    row = page.split('<tr class="node level-section" data-path="workload_cost"')[1]
    row = row.split("</tr>")[0]
    assert (
        '<td class="unscored" colspan="3">not scored: no provider has a provider-sourced cost '
        "on a workload (a self-hosted provider has no provider price)</td>"
    ) in row
    assert (
        '<small class="overall-note" id="overall-note">(mean of 4 sections, 3 of them scored: '
        "Workload Cost Score nobody scored, so it adds 0 for every provider (at most 75 of 100))"
    ) in page
