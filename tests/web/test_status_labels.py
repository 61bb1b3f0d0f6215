"""Every status label, each produced from stored data (the fixture run, imported and bent where
a label needs it) through publication to the page a visitor reads, and the precedence between
them (docs/methodology.md, "Status labels")."""

import json

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Provider, Scope, Trial
from boxbench.rawdata import PUBLIC, export_jsonl
from tests.support.web import explain_failures, figure, shown_labels

pytestmark = pytest.mark.django_db


def labels_of(response, provider) -> list[str]:
    return [label for label, _ in shown_labels(response).get(provider, [])]


def publish(run):
    explain_failures(run)
    publishing.publish(run)


def refuse_tiny(run, benchmark, code, missing):
    manifest = dict(run.manifest)
    manifest["refusals"] = [
        {**r, "code": code, "missing": missing} if r["benchmark"] == benchmark else r
        for r in manifest["refusals"]
    ]
    run.manifest = manifest
    run.save()


def boat_cpu(run):
    return Trial.objects.filter(run=run, provider__slug="boat", benchmark__slug="cpu")


def not_ranked(run):
    # 10 of boat's 20 successes gone, no failure: below the floor of 20 without an explanation.
    boat_cpu(run).filter(id__in=[t.id for t in boat_cpu(run).order_by("seq")[:10]]).delete()


def provider_failures(run):
    # 3 of boat's 20 trials failed and were not replaced: 17 + 3 reach the floor.
    failed = [t.id for t in boat_cpu(run).order_by("seq")[:3]]
    boat_cpu(run).filter(id__in=failed).update(
        outcome="provider_failure", owner="provider", cause="create returned HTTP 503"
    )


def not_offered(run):
    refuse_tiny(run, "cpu", "R402", "2 vCPU / 4096 MiB")


def account_limit(run):
    refuse_tiny(run, "cpu", "R403", "10 parallel trials x 1 sandboxes = 10 > 8")


def known_fault(run):
    boat = Provider.objects.get(slug="boat")
    boat.declaration = {**boat.declaration, "known_faults": {"cpu": "the CPU probe hangs"}}
    boat.save()


def capability_refused(run):
    pass  # the fixture's planner refused Tiny Cloud for lacking the snapshot capability


def not_measured(run):
    pass  # boat never ran trace-c


def not_displayed(run):
    boat = Provider.objects.get(slug="boat")
    boat.pricing = {**boat.pricing, "provider_sourced": False}
    boat.save()


CASES = [
    (not_ranked, "/benchmarks/cpu/", "Boat", "Not Ranked", "declared number of successful"),
    (provider_failures, "/benchmarks/cpu/", "Boat", "Provider Failures", "did not replace"),
    (not_offered, "/benchmarks/cpu/", "Tiny Cloud", "Not Offered", "not offered"),
    (account_limit, "/benchmarks/cpu/", "Tiny Cloud", "Account Limit", "concurrency limit"),
    (known_fault, "/benchmarks/cpu/", "Boat", "Not Supported", "the CPU probe hangs"),
    (capability_refused, "/benchmarks/cpu/", "Tiny Cloud", "Not Supported", "capability"),
    (not_measured, "/benchmarks/deepswe/?unit=trace-c", "Boat", "Not Measured", "measured"),
    (not_displayed, "/benchmarks/deepswe/?view=cost", "Boat", "Not Displayed", "provider-sourced"),
]


@pytest.mark.parametrize(
    ("bend", "path", "provider", "label", "meaning"),
    CASES,
    ids=[case[0].__name__ for case in CASES],
)
def test_each_label_reaches_the_page_from_stored_data(
    client, imported_run, bend, path, provider, label, meaning
):
    bend(imported_run)
    publish(imported_run)
    response = client.get(path)
    # The first label: the view's All view on a multi-unit workload (its unit's follow).
    shown, why = shown_labels(response)[provider][0]
    assert shown == label
    assert meaning in why
    # Without a ranked bar, the chart draws the label where the bar would be.
    workload = path.startswith("/benchmarks/deepswe/?view")
    chart = figure(response, "workload-chart" if workload else "metric-chart")
    bars = [y for trace in chart["data"] for y in trace["y"]]
    assert not any(y.startswith(provider) for y in bars)
    annotations = [a["text"] for a in chart["layout"]["annotations"] if a["y"].startswith(provider)]
    assert annotations == [f"<i>{label}</i>"]


def test_every_label_has_its_case_above():
    assert {case[3] for case in CASES} == {
        "Not Ranked",
        "Provider Failures",
        "Not Offered",
        "Account Limit",
        "Not Supported",
        "Not Measured",
        "Not Displayed",
    }


def test_a_ranked_bar_with_unreplaced_failures_is_labelled_provider_failures(client, imported_run):
    # The fixture's docker has one unreplaced failure on Create beside 20 successes.
    publish(imported_run)
    response = client.get("/benchmarks/create/")
    assert labels_of(response, "Docker") == ["Provider Failures"]
    bars = figure(response, "metric-chart")["data"][0]["y"]
    assert "Docker" in bars  # ranked: the bar is drawn and the label sits beside it


# Precedence: the first rule that matches decides ----------------------------------------------


def test_a_known_fault_wins_over_a_ranked_result(client, imported_run):
    known_fault(imported_run)  # boat has 20 successes on cpu: it would be ranked
    publish(imported_run)
    assert labels_of(client.get("/benchmarks/cpu/"), "Boat") == ["Not Supported"]


def test_a_provider_without_a_success_reads_provider_failures_over_not_displayed(
    client, imported_run
):
    trials = Trial.objects.filter(run=imported_run, provider__slug="boat", unit__slug="trace-a")
    trials.update(outcome="provider_failure", owner="provider", cause="sandbox stopped answering")
    not_displayed(imported_run)
    publish(imported_run)
    # The All view's time: 20 successes on trace-b and 20 unreplaced failures reach the floor of
    # 40; its cost: no provider-sourced cost. trace-a: no success at all.
    response = client.get("/benchmarks/deepswe/?unit=trace-a")
    assert labels_of(response, "Boat") == ["Provider Failures", "Provider Failures"]
    cost_view = client.get("/benchmarks/deepswe/?unit=trace-a&view=cost")
    assert labels_of(cost_view, "Boat") == ["Not Displayed", "Provider Failures"]


def test_a_missing_provider_cost_labels_the_cost_view_only(client, imported_run):
    # Boat keeps 5 of its 40 DeepSWE successes: below the floor of 40, and without a cost.
    kept = Trial.objects.filter(run=imported_run, provider__slug="boat", benchmark__slug="deepswe")
    gone = [t.id for t in kept.order_by("seq")[5:]]
    Trial.objects.filter(id__in=gone).delete()
    not_displayed(imported_run)
    publish(imported_run)
    # The Time view is ranked by the rules for time alone: below the floor, Not Ranked; the
    # Cost view says the missing cost first.
    time_view = client.get("/benchmarks/deepswe/?unit=trace-a")
    assert labels_of(time_view, "Boat") == ["Not Ranked", "Not Ranked"]
    cost_view = client.get("/benchmarks/deepswe/?unit=trace-a&view=cost")
    assert labels_of(cost_view, "Boat") == ["Not Displayed", "Not Displayed"]


def test_trials_cut_short_are_failures_top_ups_did_not_replace(client, imported_run):
    # 3 of boat's 20 CPU trials were cut short (unknown outcome, stored as provider failures of
    # unknown owner): they stopped refilling, so they are unreplaced, and 17 + 3 reach the floor.
    cut = [t.id for t in boat_cpu(imported_run).order_by("seq")[:3]]
    boat_cpu(imported_run).filter(id__in=cut).update(
        outcome="provider_failure", owner="", cause="cut short: worker lost", cut_short=True
    )
    publish(imported_run)
    assert labels_of(client.get("/benchmarks/cpu/"), "Boat") == ["Provider Failures"]
    lines = "".join(export_jsonl(imported_run, PUBLIC)).splitlines()
    counts = [c for c in map(json.loads, lines) if c["type"] == "counts"]
    boat = next(c for c in counts if (c["benchmark"], c["provider"]) == ("cpu", "boat"))
    assert boat["unreplaced_provider_failures"] == 3


def test_failures_are_counted_per_chart_on_a_workload(client, imported_run):
    # DeepSWE's floor is 40 across its units; docker completes all three (60 successes). Three
    # of its trace-c trials failed unreplaced: the All view and trace-c's chart carry them, and
    # trace-a's chart, where docker failed nothing, ranks it without a label.
    trials = Trial.objects.filter(
        run=imported_run, provider__slug="docker", benchmark__slug="deepswe", unit__slug="trace-c"
    )
    failed = [t.id for t in trials.order_by("seq")[:3]]
    trials.filter(id__in=failed).update(
        outcome="provider_failure", owner="provider", cause="create returned HTTP 503"
    )
    publish(imported_run)
    # The All view, then the chosen unit's view.
    assert labels_of(client.get("/benchmarks/deepswe/?unit=trace-c"), "Docker") == [
        "Provider Failures",
        "Provider Failures",
    ]
    assert labels_of(client.get("/benchmarks/deepswe/?unit=trace-a"), "Docker") == [
        "Provider Failures"
    ]


def test_a_subset_run_needs_the_full_floor_on_an_all_view_that_spans_every_unit(
    client, imported_run
):
    # boat's run planned two of the three units (its share of the floor: ceil(40 x 2/3) = 27),
    # but the All view spans all three units (the others ran trace-c): there it needs 40.
    imported_run.manifest = {
        **imported_run.manifest,
        "benchmarks": {"deepswe": {"trials_per_unit": 20, "units": ["trace-a", "trace-b"]}},
    }
    imported_run.save()
    trials = Trial.objects.filter(
        run=imported_run, provider__slug="boat", benchmark__slug="deepswe", unit__slug="trace-b"
    )
    trials.filter(id__in=[t.id for t in trials.order_by("seq")[:10]]).delete()  # 30 successes
    publish(imported_run)
    summary = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    boat = next(r for r in summary["rows"] if r["provider"] == "boat")
    assert (boat["n"], boat["ranking_floor"], boat["label"]) == (30, 40, "Not Ranked")
    assert labels_of(client.get("/benchmarks/deepswe/"), "Boat")[0] == "Not Ranked"


def test_a_subset_run_is_not_ranked_on_its_unit_views_below_the_full_floor(client, imported_run):
    # The same subset run (30 successes over two of three units): each unit view needs the
    # All view's full floor of 40 too, so it earns no rank and no points there either.
    imported_run.manifest = {
        **imported_run.manifest,
        "benchmarks": {"deepswe": {"trials_per_unit": 20, "units": ["trace-a", "trace-b"]}},
    }
    imported_run.save()
    trials = Trial.objects.filter(
        run=imported_run, provider__slug="boat", benchmark__slug="deepswe", unit__slug="trace-b"
    )
    trials.filter(id__in=[t.id for t in trials.order_by("seq")[:10]]).delete()
    publish(imported_run)
    for unit in ("trace-a", "trace-b"):
        response = client.get(f"/benchmarks/deepswe/?unit={unit}")
        assert labels_of(response, "Boat") == ["Not Ranked", "Not Ranked"], unit


def test_a_one_unit_subset_of_a_workload_keeps_the_workload_rules_on_its_all_view(
    client, imported_run
):
    # A run that planned only trace-a of DeepSWE's three units publishes a one-unit board. Its
    # All view is still the workload's: without a provider-sourced cost boat reads Not Displayed
    # on the Cost view and shows no workload cost, though its time is ranked.
    imported_run.manifest = {
        **imported_run.manifest,
        "benchmarks": {"deepswe": {"trials_per_unit": 20, "units": ["trace-a"]}},
    }
    imported_run.save()
    Trial.objects.filter(run=imported_run, benchmark__slug="deepswe").exclude(
        unit__slug="trace-a"
    ).delete()
    not_displayed(imported_run)
    publish(imported_run)
    summary = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    boat = next(r for r in summary["rows"] if r["provider"] == "boat")
    assert (boat["n"], boat["ranking_floor"], boat["ranked"]) == (20, 14, True)
    assert (boat["cost_label"], boat["workload_cost_usd"], boat["cost_rank"]) == (
        "Not Displayed",
        None,
        None,
    )
