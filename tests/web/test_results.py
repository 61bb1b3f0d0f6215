"""What publishing materializes: the review's methodology findings, each on the fixture run
imported through `bench import` (tests/web/factory.py) and bent where a finding needs it."""

import csv
import io
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from boxbench import audit_input, publishing
from boxbench.leaderboard.sources import run_floor
from boxbench.models import (
    Aggregate,
    Benchmark,
    MeasurementName,
    Provider,
    Run,
    Trial,
    TrialState,
    Unit,
)
from runner.benchmarks import latency_per_call
from stats import estimators
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


def unit_row(key, provider):
    data = Aggregate.objects.get(scope="unit", key=key).data
    return next(r for r in data["rows"] if r["provider"] == provider)


def summary_row(benchmark, provider):
    data = Aggregate.objects.get(scope="benchmark", key=benchmark).data
    return next(r for r in data["rows"] if r["provider"] == provider)


def publish(run):
    explain_failures(run)
    return publishing.publish(run)


def add_trials(run, benchmark, unit, provider, metrics, seq_from, state=TrialState.DONE):
    """Successful trials with the given {name: value} measurements, one dict per trial."""
    trials = []
    for offset, values in enumerate(metrics):
        trial = Trial.objects.create(
            run=run,
            benchmark=benchmark,
            unit=unit,
            provider=provider,
            round=1 + offset % 4,
            seq=seq_from + offset,
            state=state,
            outcome="success" if state == TrialState.DONE else "",
            started_at=timezone.now(),
            ended_at=timezone.now(),
            cost_usd=0.001,
            metrics=values,
        )
        MeasurementName.objects.bulk_create(
            (
                MeasurementName(
                    run=run,
                    benchmark=benchmark,
                    kind="metric",
                    name=name,
                    unit="ms",
                    clock="job_host",
                )
                for name in values
            ),
            ignore_conflicts=True,
        )
        trials.append(trial)
    return trials


# 1. The audit of a multi-unit workload ---------------------------------------------------------


def test_it_audits_a_multi_unit_workload_as_ratios_to_each_units_median(imported_run):
    frame = audit_input.audit_frame(imported_run)
    deepswe = frame[frame["benchmark"] == "deepswe"]
    # The fixture's traces run one after another and differ by 40 % each: raw values drift.
    assert deepswe["value"].between(0.5, 2.0).all()
    report = publishing.run_audit(imported_run)
    for pair in (p for p in report["pairs"] if p["benchmark"] == "deepswe"):
        assert pair["checks"]["trend"]["verdict"] != "fail", pair["provider"]
        assert pair["checks"]["lag1"]["verdict"] != "fail", pair["provider"]
    single = frame[frame["benchmark"] == "create"]["value"]
    assert single.min() > 100  # single-unit benchmarks keep their own values


# 2. No per-unit ranking floor ----------------------------------------------------------------


def test_it_ranks_a_unit_with_few_successes_once_the_workload_reaches_its_floor(imported_run):
    # deepswe's floor is 40 across three units; local keeps 8 of its 20 trace-b successes.
    dropped = Trial.objects.filter(
        run=imported_run, provider__slug="local", unit__slug="trace-b", outcome="success"
    ).order_by("seq")[:12]
    Trial.objects.filter(id__in=[t.id for t in dropped]).delete()
    publish(imported_run)
    row = unit_row("deepswe/trace-b", "local")
    assert row["n"] == 8 and row["ranked"] and row["median"] is not None
    summary = summary_row("deepswe", "local")
    assert summary["ranked"] and summary["n"] == 48
    assert summary["substituted_units"] == []


# 3. Latency per Call: the pooled median --------------------------------------------------------


def test_it_publishes_the_pooled_median_and_its_whole_trial_interval(imported_run):
    benchmark = Benchmark.objects.create(
        slug="latency-per-call",
        title="Latency per Call",
        section="sandbox_operations",
        metric="latency_ms",
        unit="ms",
        statistic="pooled_median",
        clock="job_host",
    )
    unit = Unit.objects.create(benchmark=benchmark, slug="true")
    rng = np.random.default_rng(11)
    calls = [rng.lognormal(3, 0.4, 5) * (1 + 0.5 * (k % 3)) for k in range(20)]
    metrics = []
    for trial_calls in calls:
        values = {f"latency_ms.call_{i + 1:03d}": float(v) for i, v in enumerate(trial_calls)}
        values["latency_ms"] = estimators.median(trial_calls)
        metrics.append(values)
    add_trials(imported_run, benchmark, unit, Provider.objects.get(slug="local"), metrics, 5000)
    publish(imported_run)
    row = unit_row("latency-per-call/true", "local")
    assert row["median"] == estimators.median(np.concatenate(calls))
    assert row["median"] != estimators.median([m["latency_ms"] for m in metrics])
    assert (row["ci_low"], row["ci_high"]) == estimators.pooled_bootstrap_median_ci(calls)
    assert row["tail_kind"] == "p95" and row["tail"] == estimators.percentile(
        np.concatenate(calls), 95
    )


def test_below_twenty_trials_the_pooled_tail_is_the_worst_trials_median_call(client, imported_run):
    benchmark = Benchmark.objects.create(
        slug="latency-per-call",
        title="Latency per Call",
        section="sandbox_operations",
        metric="latency_ms",
        unit="ms",
        statistic="pooled_median",
        clock="job_host",
    )
    unit = Unit.objects.create(benchmark=benchmark, slug="true")
    # Twelve trials of five calls; trial 3 has one very slow call but a typical median.
    calls = [np.array([10.0, 11.0, 12.0, 13.0, 14.0]) + k for k in range(12)]
    calls[3] = np.array([12.0, 13.0, 14.0, 15.0, 900.0])
    metrics = []
    for trial_calls in calls:
        values = {f"latency_ms.call_{i + 1:03d}": float(v) for i, v in enumerate(trial_calls)}
        values["latency_ms"] = estimators.median(trial_calls)
        metrics.append(values)
    add_trials(imported_run, benchmark, unit, Provider.objects.get(slug="local"), metrics, 5000)
    publish(imported_run)
    row = unit_row("latency-per-call/true", "local")
    # The worst trial is the last (calls 21..25, median 23), not the 900 ms single call.
    assert (row["tail"], row["tail_kind"]) == (23.0, "Slowest")
    rows = list(
        csv.reader(
            io.StringIO(client.get("/benchmarks/latency-per-call/units/true.csv").content.decode())
        )
    )
    local = dict(zip(rows[0], next(r for r in rows if r[0] == "local"), strict=True))
    assert local["tail"] == "23" and local["tail kind"] == "Slowest"


def test_its_unit_reads_as_calls_of_true_also_from_an_old_stored_version(client, imported_run):
    assert [u.title for u in latency_per_call.units()] == ["50 sequential calls of `true`"]
    # Version 1 stored the command alone as the unit's title; its pages say the calls.
    benchmark = Benchmark.objects.create(
        slug="latency-per-call",
        title="Latency per Call",
        section="sandbox_operations",
        metric="latency_ms",
        unit="ms",
        statistic="pooled_median",
        clock="job_host",
    )
    unit = Unit.objects.create(benchmark=benchmark, slug="true", title="`true`")
    metrics = [{"latency_ms": 10.0 + k, "latency_ms.call_001": 10.0 + k} for k in range(5)]
    add_trials(imported_run, benchmark, unit, Provider.objects.get(slug="local"), metrics, 5000)
    publish(imported_run)
    data = Aggregate.objects.get(scope="unit", key="latency-per-call/true").data
    assert data["unit_title"] == latency_per_call.UNIT_TITLE
    page = client.get("/benchmarks/latency-per-call/units/true/").content.decode()
    assert "50 sequential calls of <code>true</code>" in page
    overview = client.get("/").content.decode()
    assert "50 sequential calls of <code>true</code>" in overview
    assert '/units/true/"><code>true</code></a>' not in overview  # no row named only "true"


# 4. Cache and physical-limit flags reach the audit ---------------------------------------------


def test_it_feeds_the_flag_measurements_to_the_audit(imported_run):
    cpu_trials = Trial.objects.filter(
        run=imported_run, benchmark__slug="cpu", provider__slug="local", outcome="success"
    ).order_by("seq")
    for i, trial in enumerate(cpu_trials):
        trial.metrics = {**trial.metrics, "flag_cpu_bound": float(i < 5)}
        trial.save(update_fields=["metrics"])
    frame = audit_input.audit_frame(imported_run)
    local = frame[(frame["benchmark"] == "cpu") & (frame["provider"] == "local")]
    assert sorted(local["flag_cpu_bound"].tolist()) == [0.0] * 15 + [1.0] * 5
    assert local["value"].min() > 100  # the flag rows are facts, not values
    report = publishing.run_audit(imported_run)
    pair = next(p for p in report["pairs"] if (p["provider"], p["benchmark"]) == ("local", "cpu"))
    assert pair["checks"]["cache_flags"]["verdict"] == "note"
    assert pair["checks"]["cache_flags"]["details"]["notes"] == ["flag_cpu_bound"]


# 8. The ranking floor is the benchmark's; a subset of units is published as that subset -------


@pytest.mark.parametrize(
    ("planned", "units", "declared", "floor"),
    [
        (None, 1, 20, 20),  # no plan in the manifest: the declared floor
        ({"trials_per_unit": 20}, 1, 20, 20),
        ({"trials_per_unit": 3}, 1, 20, 20),  # asking for fewer trials never lowers it
        ({"trials_per_unit": 40}, 1, 20, 20),
        ({"trials_per_unit": 3, "units": ["a", "b", "c"]}, 3, 54, 54),
        ({"trials_per_unit": 20, "units": ["a", "b"]}, 3, 54, 36),  # a subset: its share
        ({"trials_per_unit": 3, "units": ["a"]}, 10, 180, 18),
        ({"trials_per_unit": 20, "units": ["a", "b"]}, 10, 180, 36),  # the default plan
        (None, 3, 54, 54),
    ],
)
def test_it_takes_the_ranking_floor_from_the_benchmark_not_the_runs_trials(
    planned, units, declared, floor
):
    benchmark = Benchmark(slug="b", trials_per_unit=20, ranking_floor=declared)
    run = Run(manifest={"benchmarks": {"b": planned}} if planned else {})
    assert run_floor(benchmark, run, units) == floor


def test_a_run_of_fewer_trials_than_the_floor_is_not_ranked(imported_run):
    imported_run.manifest = {
        **imported_run.manifest,
        "benchmarks": {"cpu": {"trials_per_unit": 10}},
    }
    imported_run.save()
    dropped = Trial.objects.filter(
        run=imported_run, provider__slug="boat", benchmark__slug="cpu"
    ).order_by("seq")[:10]
    Trial.objects.filter(id__in=[t.id for t in dropped]).delete()
    publish(imported_run)
    row = summary_row("cpu", "boat")
    assert row["n"] == 10 and not row["ranked"] and row["ranking_floor"] == 20
    assert row["label"] == "Not Ranked"


def test_unreplaced_failures_that_explain_the_shortfall_read_provider_failures(imported_run):
    boat_cpu = Trial.objects.filter(run=imported_run, provider__slug="boat", benchmark__slug="cpu")
    failed = boat_cpu.order_by("seq")[:3]
    boat_cpu.filter(id__in=[t.id for t in failed]).update(
        outcome="provider_failure", owner="provider", cause="create returned HTTP 503"
    )
    publish(imported_run)
    row = summary_row("cpu", "boat")
    assert (row["n"], row["ranked"], row["label"]) == (17, False, "Provider Failures")


def test_a_run_over_some_units_is_published_as_that_subset(client, imported_run):
    imported_run.manifest = {
        **imported_run.manifest,
        "benchmarks": {"deepswe": {"trials_per_unit": 20, "units": ["trace-a", "trace-b"]}},
    }
    imported_run.save()
    Trial.objects.filter(run=imported_run, unit__slug="trace-c").delete()
    Trial.objects.filter(run=imported_run, unit__slug="trace-b", provider__slug="boat").delete()
    publish(imported_run)
    summary = Aggregate.objects.get(scope="benchmark", key="deepswe").data
    assert summary["unit_scope"] == {"units": 2, "of": 3, "subset": True, "text": "2 of 3 units"}
    # ceil(40 x 2 / 3) = 27: the declared share per unit, so boat's 20 (trace-a only) are too few.
    assert summary_row("deepswe", "local")["ranking_floor"] == 27
    assert summary_row("deepswe", "local")["ranked"]
    assert summary_row("deepswe", "boat")["label"] == "Not Ranked"
    page = client.get("/benchmarks/deepswe/")
    html = page.content.decode()
    assert "2 of 3 units" in html and "Published as a subset" in html
    assert page.context["workload_chart"]["layout"]["title"]["text"].startswith("2 of 3 units")
    csv_text = client.get("/benchmarks/deepswe.csv").content.decode()
    assert csv_text.splitlines()[0].endswith(",units")
    assert all(line.endswith(",2 of 3 units") for line in csv_text.splitlines()[1:])
    overview = Aggregate.objects.get(scope="overview").data
    assert overview["benchmarks"]["deepswe"]["unit_scope"]["text"] == "2 of 3 units"
    # Labelled wherever its score is used: the section it feeds, its own row, its headline.
    tree = client.get("/").content.decode()
    assert '<small class="subset">(DeepSWE replay: 2 of 3 units)</small>' in tree
    assert '<small class="subset">(2 of 3 units)</small>' in tree
    assert "DeepSWE replay (2 of 3 units): every unit and provider" in tree
    # And on the provider page: the overall, the sections it feeds and the workload row.
    provider = client.get("/providers/local/").content.decode()
    assert "from a subset of units (DeepSWE replay: 2 of 3 units)</span>" in provider
    scores = provider.split('id="provider-scores"')[1].split("</table>")[0]
    assert scores.count('<small class="subset">(DeepSWE replay: 2 of 3 units)</small>') == 2
    assert "<td>2 of 3 units, a subset (workload value)</td>" in provider


# 9. Each provider's numbers come from its own latest run ---------------------------------------


def later_run(name, manifest=None):
    return Run.objects.create(
        name=name,
        status="completed",
        manifest=manifest or {},
        created_at=timezone.now() + timedelta(minutes=1),
    )


FAST_DOCKER = [
    {"total": float(v)} for v in np.random.default_rng(3).lognormal(np.log(50), 0.02, 20)
]


def test_it_keeps_other_providers_when_one_pair_is_re_run(published_run):
    rerun = later_run("docker-create-rerun")
    create = Benchmark.objects.get(slug="create")
    docker = Provider.objects.get(slug="docker")
    add_trials(rerun, create, create.units.get(), docker, FAST_DOCKER, 1)
    publishing.publish(rerun)
    assert summary_row("create", "docker")["run"] == str(rerun.id)
    assert summary_row("create", "docker")["rank"] == 1
    assert summary_row("create", "local")["run"] == str(published_run.id)
    assert summary_row("create", "boat")["ranked"]
    sources = Aggregate.objects.get(scope="benchmark", key="create").data["sources"]
    assert [s["run"] for s in sources] == [str(rerun.id), str(published_run.id)]
    assert sources[0]["providers"] == ["Docker"]


def test_it_shows_each_providers_trials_from_its_own_run(client, published_run):
    rerun = later_run("docker-create-rerun")
    create = Benchmark.objects.get(slug="create")
    docker = Provider.objects.get(slug="docker")
    add_trials(rerun, create, create.units.get(), docker, FAST_DOCKER, 1)
    publishing.publish(rerun)
    trials = client.get("/benchmarks/create/units/create/").context["trials"]
    assert {t["provider__slug"] for t in trials} == {"local", "docker", "boat"}
    docker_values = [t["value"] for t in trials if t["provider__slug"] == "docker"]
    assert len(docker_values) == 20 and max(docker_values) < 100


def test_it_refuses_to_publish_a_run_without_a_successful_trial(published_run):
    refusal = {
        "provider": "boat",
        "benchmark": "cpu",
        "code": "R402",
        "missing": "64 vCPU / 262144 MiB",
        "message": "no such size",
    }
    empty = later_run("refusals-only", {"refusals": [refusal]})
    cpu = Benchmark.objects.get(slug="cpu")
    add_trials(
        empty,
        cpu,
        cpu.units.get(),
        Provider.objects.get(slug="local"),
        [{}],
        1,
        state=TrialState.CANCELLED,
    )
    with pytest.raises(publishing.PublishRefused, match="has no successful trial"):
        publishing.publish(empty)
    empty.refresh_from_db()
    assert not empty.published
    assert summary_row("cpu", "boat")["ranked"]  # the board is untouched


# Minor: the interval belongs to time medians -----------------------------------------------------


def test_it_gives_an_interval_to_time_medians_only(published_run):
    create = unit_row("create/create", "local")  # ms
    assert create["ci_low"] < create["median"] < create["ci_high"]
    cpu = unit_row("cpu/cpu", "local")  # ops/s
    assert cpu["median"] and cpu["ci_low"] is None and cpu["ci_high"] is None


# Every status label: Not Supported for a known fault, Not Displayed without a result in a view ---


def test_a_known_fault_in_the_declaration_reads_not_supported_with_its_note(imported_run):
    docker = Provider.objects.get(slug="docker")
    docker.declaration = {**docker.declaration, "known_faults": {"cpu": "the CPU probe hangs"}}
    docker.save()
    publish(imported_run)
    row = summary_row("cpu", "docker")
    assert (row["label"], row["ranked"]) == ("Not Supported", False)
    assert row["meaning"].endswith("Known fault: the CPU probe hangs")
    assert summary_row("cpu", "local")["label"] is None  # others unaffected


def test_a_provider_without_a_result_in_a_derived_view_reads_not_displayed(imported_run):
    for trial in Trial.objects.filter(run=imported_run, provider__slug="boat"):
        trial.stages = {k: v for k, v in trial.stages.items() if k != "ready"}
        trial.save(update_fields=["stages"])
    publish(imported_run)
    boat = unit_row("create/create", "boat")
    assert boat["derived"]["ready"]["trials"] == 0
    assert boat["derived"]["ready"]["label"] == "Not Displayed"
    assert "label" not in boat["derived"]["create"]  # it has a result there
    assert "label" not in unit_row("create/create", "local")["derived"]["ready"]


def test_it_never_combines_runs_timed_from_job_hosts_of_another_region(client, published_run):
    # docker's pair is re-run from a job host in another region: a separate series, so the board
    # keeps every provider's numbers from the fixture's series and names the other run.
    manifest = {
        "providers": {
            "docker": {
                "job_host": "far-host",
                "seq_base": 0,
                "job_host_type": "c7i.xlarge",
                "job_host_region": "eu-west-1",
            }
        }
    }
    rerun = later_run("docker-create-eu", manifest)
    create = Benchmark.objects.get(slug="create")
    docker = Provider.objects.get(slug="docker")
    add_trials(rerun, create, create.units.get(), docker, FAST_DOCKER, 1)
    publishing.publish(rerun)
    assert summary_row("create", "docker")["run"] == str(published_run.id)
    summary = Aggregate.objects.get(scope="benchmark", key="create").data
    assert [s["run"] for s in summary["sources"]] == [str(published_run.id)]
    assert summary["other_series"] == [
        {
            "provider": "docker",
            "run": str(rerun.id),
            "job_host_type": "c7i.xlarge",
            "job_host_region": "eu-west-1",
        }
    ]
    page = client.get("/benchmarks/create/").content.decode()
    assert "Not combined with these results" in page and "eu-west-1" in page
    # The same region and type as the fixture's (not recorded) would have been combined.
    assert summary["job_host_series"] == {"type": "not recorded", "region": "not recorded"}


def test_the_overview_never_combines_boards_timed_from_job_hosts_of_another_region(
    client, published_run
):
    # Every provider's CPU numbers are measured again from job hosts in another region: the CPU
    # board follows them, and the overview, which cannot combine the two series, scores the
    # boards of the series most of them share and names the CPU board instead.
    region = {"job_host": "far-host", "seq_base": 0, "job_host_region": "eu-west-1"}
    region["job_host_type"] = "c7i.xlarge"
    providers = ("local", "docker", "boat")
    rerun = later_run("cpu-eu", {"providers": {slug: dict(region) for slug in providers}})
    cpu = Benchmark.objects.get(slug="cpu")
    for i, slug in enumerate(providers):
        values = [{"total": 1000.0 * (i + 1) + k} for k in range(20)]
        add_trials(rerun, cpu, cpu.units.get(), Provider.objects.get(slug=slug), values, 100 * i)
    publish(rerun)
    assert Aggregate.objects.get(scope="benchmark", key="cpu").data["job_host_series"] == {
        "type": "c7i.xlarge",
        "region": "eu-west-1",
    }
    overview = Aggregate.objects.get(scope="overview", key="").data
    assert overview["job_host_series"] == {"type": "not recorded", "region": "not recorded"}
    assert overview["not_combined"] == [
        {"benchmark": "cpu", "title": "CPU", "type": "c7i.xlarge", "region": "eu-west-1"}
    ]
    machine = next(c for c in overview["tree"]["children"] if c["key"] == "machine_performance")
    assert machine["scores"] == {}  # the CPU board is not scored in the overview
    page = client.get("/").content.decode()
    assert "Not combined (timed from job hosts of another type or region" in page
    assert "eu-west-1" in page
