"""Verdicts between adjacent ranks on every benchmark page, and the overview's lead sentences,
read from the comparisons materialized at publication (boxbench/leaderboard/verdicts.py)."""

import html

import pytest

from boxbench.models import Aggregate, Scope, Trial

pytestmark = pytest.mark.django_db


def test_each_adjacent_pair_carries_the_verdict_of_its_comparison(client, cpu_alike_run):
    summary = Aggregate.objects.page(Scope.BENCHMARK, "create")
    verdicts = summary["verdicts"]
    ranked = sorted((r for r in summary["rows"] if r["rank"]), key=lambda r: r["rank"])
    assert [(v["upper"], v["lower"]) for v in verdicts] == [
        (a["provider"], b["provider"]) for a, b in zip(ranked, ranked[1:], strict=False)
    ]
    page = client.get("/benchmarks/create/").content.decode()
    for v in verdicts:
        compared = Aggregate.objects.page(Scope.COMPARE, v["upper"], v["lower"])
        row = next(r for r in compared["rows"] if r["benchmark"] == "create" and not r["stage"])
        assert v["verdict"] == row["verdict"]
        assert html.escape(v["text"]) in page
    first = verdicts[0]
    assert first["verdict"] == "a"  # local, ahead of boat by about 1.3x
    assert first["text"].startswith("Local sandbox faster by 1.")
    assert first["text"].endswith(" than Boat")


def test_a_difference_the_sample_cannot_detect_marks_the_rank_with_an_approximately(
    client, cpu_alike_run
):
    summary = Aggregate.objects.page(Scope.BENCHMARK, "cpu")
    same = [v for v in summary["verdicts"] if v["same"]]
    assert [{v["upper"], v["lower"]} for v in same] == [{"local", "docker"}]
    [v] = same
    assert "no detectable difference (< " in v["text"]
    assert "these trials cannot tell them apart" in v["text"]
    page = client.get("/benchmarks/cpu/").content.decode()
    assert f"<b>≈#{v['lower_rank']} {v['lower_name']}</b>" in page
    assert html.escape(v["text"]) in page


def test_the_overview_opens_with_a_sentence_per_section_and_the_publications_facts(
    client, cpu_alike_run
):
    lead = Aggregate.objects.page(Scope.OVERVIEW)["lead"]
    assert [s.split(":")[0] for s in lead["sentences"]] == [
        "Workload",
        "Sandbox Operations",
        "Machine Performance",
    ]
    create = Aggregate.objects.page(Scope.BENCHMARK, "create")["verdicts"][0]["text"]
    assert f"Sandbox Operations: on Create, {create}." in lead["sentences"]
    assert lead["sentences"][0].startswith(
        "Workload: on DeepSWE replay, the first two providers differ detectably on "
    )
    assert lead["trials"] == Trial.objects.filter(run=cpu_alike_run).count()
    page = client.get("/").content.decode()
    for sentence in lead["sentences"]:
        assert html.escape(sentence) in page
    published = cpu_alike_run.published_at.date().isoformat()
    assert f"Published {published} from {lead['trials']} trials" in page


def test_a_workload_carries_the_verdict_on_its_whole_workload_value(client, cpu_alike_run):
    summary = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    ranked = sorted((r for r in summary["rows"] if r["rank"]), key=lambda r: r["rank"])
    whole = summary["workload_verdicts"]
    assert [(v["upper"], v["lower"]) for v in whole] == [
        (a["provider"], b["provider"]) for a, b in zip(ranked, ranked[1:], strict=False)
    ]
    for v in whole:
        assert v["text"].endswith("units both completed)")
        if v["verdict"] == "a":
            assert v["text"].startswith(f"{v['upper_name']} faster by ")
    page = client.get("/benchmarks/deepswe/").content.decode()
    # Above the workload chart, so a phone's first screen shows who is ahead.
    listed = page.split('id="workload-verdicts"')[1].split('id="workload-chart"')[0]
    for v in whole:
        assert html.escape(v["text"]) in listed
    lead = Aggregate.objects.page(Scope.OVERVIEW)["lead"]["sentences"][0]
    assert lead.endswith(f"; on the whole workload, {whole[0]['text']}.")


def test_a_unit_page_opens_with_its_verdicts(client, cpu_alike_run):
    unit = Aggregate.objects.page(Scope.UNIT, "deepswe", "trace-a")
    page = client.get("/benchmarks/deepswe/units/trace-a/").content.decode()
    top = page.split('id="distribution-chart"')[0]  # before the chart: the first screen
    assert unit["verdicts"] and all(html.escape(v["text"]) in top for v in unit["verdicts"])
