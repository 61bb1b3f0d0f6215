"""The RL rollouts board's projection of a million rollouts as a reader sees it: figures with
their intervals, the formula and links to its inputs, the same in the CSV and the API, and a
provider with a missing input named and given no figure."""

import csv
import io

import pytest
from django.db.models import Max

from boxbench import publishing
from boxbench.models import Aggregate, Benchmark, Provider, Scope, Trial, TrialState, Unit
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db

PRICING = {
    "provider_sourced": True,
    "source": "https://docker.example/pricing",
    "date": "2026-11-29",
    "currency": "USD",
    "per_vcpu_second": 0.00001,
    "per_gib_second": 0.0,
    "per_sandbox": 0.0,
    "billing_increment_s": 0,
    "minimum_s": 0,
}
# One request of a burst, enough for the Burst board's curve; the figures are in the metrics.
READY = {"planned_ms": 0.0, "sent_ms": 0.0, "created_ms": 1.0, "ready_ms": 1000.0, "outcome": "ok"}


def benchmark(slug, metric, units, section):
    found = Benchmark.objects.create(
        slug=slug, title=slug.title(), section=section, metric=metric, unit="ms",
        direction="lower", clock="job_host", trials_per_unit=3, ranking_floor=3,
        required_capabilities=["exec"],
    )  # fmt: skip
    return found, {u: Unit.objects.create(benchmark=found, slug=u) for u in units}


@pytest.fixture
def rl_run(imported_run):
    """RL episodes of 2 s and 8 s on docker (both units) and on local (one unit only); docker's
    8-tier bursts make 1 sandbox ready a second, its 32-tier 0.5; docker is priced, local not."""
    run = imported_run
    local, docker = Provider.objects.get(slug="local"), Provider.objects.get(slug="docker")
    docker.pricing = PRICING
    docker.save()
    local.pricing = {**PRICING, "provider_sourced": False, "per_vcpu_second": 0.0}
    local.save()
    rl, units = benchmark("rl-rollouts", "episode_ms", ["six", "toolz"], "workload")
    burst, tiers = benchmark("burst", "last_ready_ms", ["8", "32"], "sandbox_operations")
    seq = Trial.objects.filter(run=run).aggregate(Max("seq"))["seq__max"]
    trials = [
        (docker, rl, units["six"], {"episode_ms": 2000.0}),
        (docker, rl, units["toolz"], {"episode_ms": 8000.0}),
        (local, rl, units["six"], {"episode_ms": 1000.0}),
        (docker, burst, tiers["8"], {"last_ready_ms": 8000.0, "throughput_per_s": 1.0}),
        (docker, burst, tiers["32"], {"last_ready_ms": 64000.0, "throughput_per_s": 0.5}),
    ]
    for provider, bench, unit, metrics in trials:
        for _ in range(3):
            seq += 1
            Trial.objects.create(
                run=run, benchmark=bench, unit=unit, provider=provider, round=1, seq=seq,
                state=TrialState.DONE, outcome="success", metrics=metrics,
                requests=[READY] if bench == burst else [],
            )  # fmt: skip
    explain_failures(run)
    return publishing.publish(run)


def projection_rows():
    page = Aggregate.objects.page(Scope.BENCHMARK, "rl-rollouts")
    return {r["provider"]: r for r in page["rollouts"]["rows"]}


def test_publication_projects_each_provider_from_its_own_measured_inputs(rl_run):
    rows = projection_rows()
    docker = rows["docker"]["figures"]
    assert docker["knee_tier"] == 8  # 1 ready a second beats 0.5 at 32
    assert docker["episode_s"]["value"] == pytest.approx(4.0)  # geometric mean of 2 s and 8 s
    assert docker["sandbox_hours"]["value"] == pytest.approx(1_000_000 * 4 / 3600)
    # 8 copies of 4 s would finish 2 a second; creates at the knee make only 1.
    assert docker["wall_hours"]["value"] == pytest.approx(1_000_000 / 3600)
    assert docker["cost_usd"]["value"] == pytest.approx(1_000_000 * 4 * 2 * 0.00001)
    assert rows["docker"]["missing"] == []
    assert rows["local"]["figures"] is None
    assert rows["local"]["missing"] == [
        "no successful RL rollout trials on toolz",
        "no successful burst on the Burst board",
        "no provider price in its declaration (cost only)",
    ]


def test_the_board_shows_the_formula_the_figures_and_links_to_their_inputs(client, rl_run):
    html = client.get("/benchmarks/rl-rollouts/").content.decode()
    section = html[html.index('id="rollouts"') :]
    assert "wall hours = N / min(K / e, r) / 3600" in section
    assert 'href="/benchmarks/burst/units/8/"' in section
    assert 'href="/providers/docker/"' in section
    # Docker's cost per 1M rollouts (USD) and its sandbox-hours, each with its interval.
    assert 'href="/providers/docker/">80</a> <small>[80, 80]</small>' in section
    assert "1111.1 <small>[1111.1, 1111.1]</small>" in section
    assert "no successful RL rollout trials on toolz" in section
    assert "Not projected" in section


def test_the_csv_and_the_api_carry_the_projection(client, rl_run):
    text = client.get("/benchmarks/rl-rollouts.csv").content.decode()
    rows = {r["provider"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows["docker"]["rollout knee tier"] == "8"
    assert rows["docker"]["1M rollouts wall hours"] == "277.8"  # 1,000,000 / 3600
    assert float(rows["docker"]["1M rollouts cost (USD)"]) == pytest.approx(80.0)
    assert rows["local"]["1M rollouts wall hours"] == ""
    assert "no provider price" in rows["local"]["rollout missing input"]
    answer = client.get("/api/v1/benchmarks/rl-rollouts").json()
    found = {r["provider"]: r for r in answer["page"]["rollouts"]["rows"]}
    assert found["docker"]["figures"]["knee_tier"] == 8
    assert "rollout knee tier" in answer["table"]["columns"]
