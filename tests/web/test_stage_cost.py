"""DeepSWE's Cost view: each stage's cost is the shown cost times that stage's share under the
same statistic (the mean: stage mean / sum of stage means), published per unit, drawn so the
stage costs fill the shown cost, and downloaded as the view's CSV.

The stage costs are recomputed here from the stored trials alone (stage means, mean cost per
success), independently of stats.bars, and must agree with every published figure."""

import csv
import io
import math
import re
import statistics

import numpy as np
import pytest

from boxbench.models import Aggregate, Benchmark, Provider, Scope, Trial
from boxbench.templatetags.boxbench_format import usd
from boxbench.views.tables import header
from tests.support.web import explain_failures, figure, html_table
from tests.web import factory

pytestmark = pytest.mark.django_db
STAGES = factory.STAGES["deepswe"]


def publish(run):
    from boxbench import publishing

    explain_failures(run)
    return publishing.publish(run)


def cost_rows(unit_key):
    data = Aggregate.objects.get(scope="unit", key=unit_key).data
    return {r["provider"]: r for r in data["cost_rows"]}


def csv_rows(response):
    return list(csv.reader(io.StringIO(response.content.decode())))


def recomputed(provider, unit):
    """(mean cost per success, {stage: (cost, width)}) from the stored successful trials."""
    trials = Trial.objects.filter(
        provider__slug=provider, unit__slug=unit, benchmark__slug="deepswe", outcome="success"
    )
    costs = [t.cost_usd for t in trials]
    mean_cost = math.fsum(costs) / len(costs)
    means = {stage: statistics.fmean(t.stages[stage] for t in trials) for stage in STAGES}
    stage_sum = math.fsum(means.values())
    return mean_cost, {
        stage: (mean_cost * m / stage_sum, mean_cost * m / stage_sum) for stage, m in means.items()
    }


def cost_interval(provider, unit):
    """The 95 % bootstrap interval of the mean cost per success, recomputed with plain numpy:
    10000 resamples of the trials in seq order, seed 0, nearest ranks 250 and 9750."""
    trials = Trial.objects.filter(
        provider__slug=provider, unit__slug=unit, benchmark__slug="deepswe", outcome="success"
    ).order_by("seq")
    costs = np.array([t.cost_usd for t in trials])
    idx = np.random.default_rng(0).integers(0, costs.size, size=(10000, costs.size))
    means = np.sort(costs[idx].mean(axis=1))
    return means[249], means[9749]


def test_the_mean_cost_per_success_carries_its_bootstrap_interval(published_run):
    for provider in ("local", "docker", "boat"):
        row = cost_rows("deepswe/trace-a")[provider]
        low, high = cost_interval(provider, "trace-a")
        assert (row["cost_ci_low"], row["cost_ci_high"]) == pytest.approx((low, high), rel=1e-12)
        assert row["cost_ci_low"] <= row["mean_cost_usd"] <= row["cost_ci_high"]


def without_provider_cost(*slugs):
    for provider in Provider.objects.filter(slug__in=slugs):
        provider.pricing = {**provider.pricing, "provider_sourced": False}
        provider.save()


def test_each_stage_cost_is_the_shown_cost_times_its_share_of_the_stage_means(published_run):
    for unit in ("trace-a", "trace-b", "trace-c"):
        rows = cost_rows(f"deepswe/{unit}")
        for provider in ("local", "docker", "boat"):
            if (provider, unit) == ("boat", "trace-c"):
                continue  # boat never ran trace-c
            row = rows[provider]
            mean_cost, expected = recomputed(provider, unit)
            assert row["mean_cost_usd"] == pytest.approx(mean_cost, rel=1e-12)
            bar = row["stage_costs"]
            assert bar["total_cost"] == pytest.approx(mean_cost, rel=1e-12)
            assert [s["stage"] for s in bar["segments"]] == STAGES
            for segment in bar["segments"]:
                cost, width = expected[segment["stage"]]
                assert segment["cost"] == pytest.approx(cost, rel=1e-12), (provider, unit)
                assert segment["width"] == pytest.approx(width, rel=1e-12), (provider, unit)
            assert math.fsum(s["width"] for s in bar["segments"]) == pytest.approx(mean_cost)


def test_the_cost_view_ranks_by_cost_and_labels_a_unit_a_provider_never_ran(published_run):
    rows = cost_rows("deepswe/trace-a")
    assert [rows[p]["rank"] for p in ("local", "boat", "docker")] == [1, 2, 3]
    assert all(rows[p]["ranked"] and rows[p]["label"] is None for p in ("local", "boat"))
    assert rows["tiny"]["label"] == "Not Supported"  # refused by the planner
    boat = cost_rows("deepswe/trace-c")["boat"]
    assert (boat["label"], boat["stage_costs"], boat["mean_cost_usd"]) == (
        "Not Measured",
        None,
        None,
    )
    # The Time view's rows do not repeat the stage costs.
    time_rows = Aggregate.objects.get(scope="unit", key="deepswe/trace-a").data["rows"]
    assert all("stage_costs" not in r for r in time_rows)


def test_a_provider_without_a_provider_sourced_cost_gets_no_stage_cost_bar(imported_run):
    without_provider_cost("boat")
    publish(imported_run)
    boat = cost_rows("deepswe/trace-a")["boat"]
    assert (boat["label"], boat["ranked"]) == ("Not Displayed", False)
    assert boat["stage_costs"] is None and boat["mean_cost_usd"] is None
    assert "provider-sourced cost" in boat["meaning"]
    assert cost_rows("deepswe/trace-a")["local"]["stage_costs"] is not None


def test_the_cost_chart_fills_the_shown_cost_and_labels_each_stage_cost(client, imported_run):
    without_provider_cost("boat")
    publish(imported_run)
    response = client.get("/benchmarks/deepswe/?unit=trace-a&view=cost")
    chart = figure(response, "cost-chart")
    assert [trace["name"] for trace in chart["data"]] == STAGES
    rows = cost_rows("deepswe/trace-a")
    for provider, name in (("local", "Local sandbox"), ("docker", "Docker")):
        widths, labels = [], []
        for trace in chart["data"]:
            at = trace["y"].index(name)
            widths.append(trace["x"][at])
            labels.append(trace["text"][at])
        assert math.fsum(widths) == pytest.approx(rows[provider]["mean_cost_usd"])
        _, expected = recomputed(provider, "trace-a")
        assert labels == [usd(expected[stage][0]) for stage in STAGES]
    assert all("Boat (EU)" not in trace["y"] for trace in chart["data"])
    page = response.content.decode()
    assert "<b>Boat</b>: Not Displayed" in page  # the status label says why Boat has no bar
    annotations = [a["text"] for a in chart["layout"]["annotations"] if a["y"] == "Boat (EU)"]
    assert annotations == ["<i>Not Displayed</i>"]
    assert "Each stage's cost is the mean cost per success" in page
    assert "its mean ÷ the sum of stage means" in page
    assert figure(response, "metric-chart") is None  # the Time view's charts are not drawn
    assert figure(response, "stage-chart") is None


def test_a_cost_view_without_any_provider_sourced_cost_is_not_drawn_and_says_why(
    client, imported_run
):
    without_provider_cost("local", "docker", "boat")
    publish(imported_run)
    response = client.get("/benchmarks/deepswe/?view=cost")
    assert figure(response, "cost-chart") is None
    page = response.content.decode()
    why = re.search(r'<p class="empty chart-empty" id="cost-chart-empty">(.*?)</p>', page, re.S)
    assert why and "Not Displayed" in why.group(1) and "provider-sourced cost" in why.group(1)
    assert figure(response, "workload-chart") is None


def test_the_cost_views_csv_is_the_table_on_the_page(client, imported_run):
    without_provider_cost("boat")
    publish(imported_run)
    rows = csv_rows(client.get("/benchmarks/deepswe/units/trace-a.csv?view=cost"))
    assert rows[0] == [
        "provider",
        "rank",
        "label",
        "n",
        "mean cost per success (USD)",
        "cost ci_low (USD)",
        "cost ci_high (USD)",
        "setup cost (USD)",
        "replay cost (USD)",
        "verify cost (USD)",
    ]
    page = client.get("/benchmarks/deepswe/?unit=trace-a&view=cost")
    assert [[header(c) for c in rows[0]], *rows[1:]] == html_table(page, "unit-table")
    by_provider = {r[0]: r for r in rows[1:]}
    mean_cost, expected = recomputed("local", "trace-a")
    assert by_provider["local"][1:5] == ["1", "", "20", usd(mean_cost)]
    assert by_provider["local"][5:7] == [usd(end) for end in cost_interval("local", "trace-a")]
    assert by_provider["local"][7:] == [usd(expected[stage][0]) for stage in STAGES]
    assert by_provider["boat"][2:] == ["Not Displayed", "20", "", "", "", "", "", ""]
    notes = re.findall(r'<p class="hint blank-notes">(.*?)</p>', page.content.decode(), re.S)
    assert "<b>Setup cost (USD)</b>: No stage cost: it needs a provider-sourced cost" in notes[-1]


def test_the_all_view_of_the_cost_view_shows_the_workload_cost(client, published_run):
    response = client.get("/benchmarks/deepswe/?view=cost")
    chart = figure(response, "workload-chart")
    assert chart["data"][0]["name"] == "workload cost"
    summary = Aggregate.objects.get(scope="benchmark", key="deepswe").data
    costs = {r["provider"]: r["workload_cost_usd"] for r in summary["rows"]}
    assert costs["local"] < costs["boat"] < costs["docker"]
    # In order of cost, lower first (the Time view orders the same rows by time).
    assert chart["data"][0]["x"] == [costs["local"], costs["boat"], costs["docker"]]
    rows = csv_rows(client.get("/benchmarks/deepswe.csv?view=cost"))
    assert rows[0] == [
        "provider",
        "cost rank",
        "label",
        "workload cost (USD)",
        "substituted units",
        "n",
        "units",
        "setup cost (USD)",
        "replay cost (USD)",
        "verify cost (USD)",
    ]
    assert [[header(c) for c in rows[0]], *rows[1:]] == html_table(response, "benchmark-table")
    assert [r[:2] for r in rows[1:]] == [
        ["local", "1"],
        ["boat", "2"],
        ["docker", "3"],
        ["tiny", ""],
    ]
    boat = next(r for r in rows if r[0] == "boat")
    assert boat[3] == usd(costs["boat"]) and boat[4] == "trace-c"  # the highest cost substituted
    page = response.content.decode()
    assert "Boat: No successful trials on trace-c: the highest cost observed on it" in page
    assert "slowest time" not in page  # the Time view's substitution note stays there
    assert "the slowest time" in client.get("/benchmarks/deepswe/").content.decode()


def test_the_all_views_cost_csv_holds_its_stage_costs(client, published_run):
    # Each provider's workload cost split by its stage shares, each completed unit weighing the
    # same: recomputed from the stored trials.
    summary = {r["provider"]: r for r in Aggregate.objects.page(Scope.BENCHMARK, "deepswe")["rows"]}
    rows = csv_rows(client.get("/benchmarks/deepswe.csv?view=cost"))
    by_provider = {r[0]: dict(zip(rows[0], r, strict=True)) for r in rows[1:]}
    for provider in ("local", "docker", "boat"):
        units = ["trace-a", "trace-b"] + ([] if provider == "boat" else ["trace-c"])
        shares = []
        for unit in units:
            mean_cost, costs = recomputed(provider, unit)
            shares.append({stage: costs[stage][0] / mean_cost for stage in STAGES})
        total = summary[provider]["workload_cost_usd"]
        expected = {s: total * math.fsum(u[s] for u in shares) / len(shares) for s in STAGES}
        published = summary[provider]["stage_costs"]
        assert published == pytest.approx(expected, rel=1e-12), provider
        assert math.fsum(published.values()) == pytest.approx(total, rel=1e-12)
        for stage in STAGES:
            assert by_provider[provider][f"{stage} cost (USD)"] == usd(expected[stage])
    assert by_provider["tiny"]["setup cost (USD)"] == ""  # refused: no cost to share


@pytest.mark.parametrize(
    "path",
    [
        "/benchmarks/deepswe/?view=speed",
        "/benchmarks/deepswe.csv?view=speed",
        "/benchmarks/create/?view=cost",  # not a workload: no Cost view
        "/benchmarks/create/units/create.csv?view=cost",
    ],
)
def test_a_view_the_benchmark_does_not_have_is_a_404(client, published_run, path):
    assert client.get(path).status_code == 404


def test_the_time_view_links_to_the_cost_view_and_keeps_the_unit(client, published_run):
    page = client.get("/benchmarks/deepswe/?unit=trace-b").content.decode()
    assert 'href="?unit=trace-b&amp;view=cost"' in page
    cost_page = client.get("/benchmarks/deepswe/?unit=trace-b&view=cost").content.decode()
    assert 'href="?unit=trace-c&amp;view=cost#unit"' in cost_page
    assert 'href="/benchmarks/deepswe/units/trace-b.csv?view=cost"' in cost_page
    assert "Views:" not in client.get("/benchmarks/create/").content.decode()
    assert 'id="views"' not in client.get("/benchmarks/create/").content.decode()


# The honest DeepSWE: its CSV downloads say these are not the reference set's numbers -----------


def test_deepswe_csv_downloads_say_they_are_not_the_reference_set(client, imported_run):
    from runner.benchmarks import deepswe

    Benchmark.objects.filter(slug="deepswe").update(slug=deepswe.SLUG)
    publish(imported_run)
    for path in (
        f"/benchmarks/{deepswe.SLUG}.csv",
        f"/benchmarks/{deepswe.SLUG}.csv?view=cost",
        f"/benchmarks/{deepswe.SLUG}/units/trace-a.csv",
        f"/benchmarks/{deepswe.SLUG}/units/trace-a.csv?view=cost",
    ):
        rows = csv_rows(client.get(path))
        assert rows[0][-1] == "note", path
        assert {r[-1] for r in rows[1:]} == {deepswe.NOT_THE_REFERENCE}, path
        assert all(len(r) == len(rows[0]) for r in rows), path
    assert "not the reference DeepSWE set" in deepswe.NOT_THE_REFERENCE
    # Other benchmarks' downloads keep their columns.
    assert csv_rows(client.get("/benchmarks/create.csv"))[0][-1] == "units"


def test_a_one_unit_workload_shows_no_cost_a_provider_does_not_source(client, imported_run):
    Trial.objects.filter(run=imported_run, unit__slug__in=["trace-b", "trace-c"]).delete()
    Benchmark.objects.filter(slug="deepswe").update(ranking_floor=20)  # ranked on one unit
    without_provider_cost("boat")
    publish(imported_run)
    summary = Aggregate.objects.get(scope="benchmark", key="deepswe").data
    assert not summary["multi_unit"]
    rows = {r[0]: r for r in csv_rows(client.get("/benchmarks/deepswe.csv?view=cost"))[1:]}
    assert rows["boat"][2:4] == ["Not Displayed", ""] and rows["local"][2] == ""
    assert rows["local"][3] != ""
    page = client.get("/benchmarks/deepswe/?view=cost")
    assert 'href="/benchmarks/deepswe.csv?view=cost"' in page.content.decode()
    assert figure(page, "cost-chart") is not None
