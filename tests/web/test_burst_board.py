"""The Burst and Density boards as a reader sees them: the ready-count curve per tier, the tier
sweep, Account Limit above the declared concurrency, rate-limited requests counted apart, only
the default tier scored, and each provider's documented limits beside the measured ones."""

import json

import pytest
from django.db.models import Max

from boxbench import publishing
from boxbench.models import Aggregate, Benchmark, Provider, Scope, Trial, TrialState, Unit
from stats.burst import burst_figures
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db

LIMITS = {
    "local": {
        "concurrent_sandboxes": 8,
        "create_rate_per_s": None,
        "api_requests_per_s": None,
        "account_tier": "none: the job host itself",
        "source": "boxbench: the job host's own capacity",
        "date": "2026-11-30",
    },
    "docker": {
        "concurrent_sandboxes": 50,
        "create_rate_per_s": 5,
        "api_requests_per_s": 100,
        "account_tier": "Team",
        "source": "https://docker.example/limits",
        "date": "2026-11-29",
    },
}


def burst(ready_ms: list[float], limited: int = 0) -> list[dict]:
    """A burst's requests: one ready at each time, then `limited` answered rate_limited."""
    ok = [
        {"planned_ms": 0.0, "sent_ms": 1.0, "created_ms": ms / 2, "ready_ms": ms, "outcome": "ok"}
        for ms in ready_ms
    ]
    refused = [
        {
            "planned_ms": 0.0,
            "sent_ms": 1.0,
            "created_ms": None,
            "ready_ms": None,
            "outcome": "rate_limited",
        }
    ] * limited
    return [{**r, "cause": ""} for r in ok + refused]


def add_benchmark(slug, metric, units, floor):
    benchmark = Benchmark.objects.create(
        slug=slug,
        title=slug.title(),
        section="sandbox_operations",
        metric=metric,
        unit="ms" if slug == "burst" else "count",
        direction="lower" if slug == "burst" else "higher",
        clock="job_host",
        trials_per_unit=floor,
        ranking_floor=floor,
        required_capabilities=["exec"],
        charted=slug == "burst",
    )
    return benchmark, {u: Unit.objects.create(benchmark=benchmark, slug=u) for u in units}


@pytest.fixture
def burst_run(imported_run):
    """The fixture run with bursts of tiers 1 and 8 on local (its account stops at 8, so no
    32), 8 and 32 on docker (each 8-burst with one rate-limited request), and density on
    local, then published."""
    run = imported_run
    for slug, limits in LIMITS.items():
        provider = Provider.objects.get(slug=slug)
        provider.declaration = {**provider.declaration, "limits": limits}
        provider.save()
    local, docker = Provider.objects.get(slug="local"), Provider.objects.get(slug="docker")
    bench, tiers = add_benchmark("burst", "last_ready_ms", ["1", "8", "32"], 3)
    density, cap = add_benchmark("density", "sandboxes_reached", ["cap"], 3)
    seq = Trial.objects.filter(run=run).aggregate(Max("seq"))["seq__max"]
    cells = [
        (local, "1", [[100.0], [120.0], [110.0]], 0),
        (local, "8", [[100.0 * (i + 1) for i in range(8)]] * 3, 0),
        (docker, "8", [[200.0 * (i + 1) for i in range(7)]] * 3, 1),
        (docker, "32", [[150.0 * (i + 1) for i in range(32)]] * 3, 0),
    ]
    for provider, tier, bursts, limited in cells:
        for ready in bursts:
            seq += 1
            requests = burst(ready, limited)
            Trial.objects.create(
                run=run, benchmark=bench, unit=tiers[tier], provider=provider, round=1,
                seq=seq, state=TrialState.DONE, outcome="success",
                metrics=burst_figures(requests), requests=requests,
            )  # fmt: skip
    for reached, refused in ((6, 1), (7, 1), (9, 0)):
        seq += 1
        Trial.objects.create(
            run=run, benchmark=density, unit=cap["cap"], provider=local, round=1, seq=seq,
            state=TrialState.DONE, outcome="success",
            metrics={"sandboxes_reached": reached, "refused": refused},
        )  # fmt: skip
    explain_failures(run)
    return publishing.publish(run)


def figures_of(html: str, chart_id: str) -> dict:
    start = html.index(f'id="{chart_id}-data"')
    start = html.index(">", start) + 1
    return json.loads(html[start : html.index("</script>", start)])


def test_the_burst_page_charts_the_ready_curve_and_the_tier_sweep(client, burst_run):
    html = client.get("/benchmarks/burst/?unit=8").content.decode()
    curve = figures_of(html, "burst-ready-chart")
    local = next(t for t in curve["data"] if t["name"] == "Local sandbox")
    # Three identical bursts: the mean count steps by one at each ready time.
    assert local["x"][:3] == [0.0, 0.1, 0.1] and local["y"][-1] == 8
    throughput = figures_of(html, "burst-throughput-chart")
    docker = next(t for t in throughput["data"] if t["name"] == "Docker")
    assert docker["x"] == [8, 32]
    assert docker["y"] == [pytest.approx(7 / 1.4), pytest.approx(32 / 4.8)]
    p95 = figures_of(html, "burst-p95-chart")
    assert next(t for t in p95["data"] if t["name"] == "Local sandbox")["x"] == [1, 8]


def test_tiers_above_the_account_limit_say_so_and_rate_limits_are_apart(client, burst_run):
    html = client.get("/benchmarks/burst/").content.decode()
    sweep = html[
        html.index('id="burst-sweep"') : html.index("</table>", html.index('id="burst-sweep"'))
    ]
    assert "<td>Local sandbox</td><td>32</td>" in sweep
    assert "Account Limit" in sweep
    # Docker's 8-tier: 3 bursts of 8 requests, 3 of them rate limited, not failures.
    assert "<td>Docker</td><td>8</td>\n<td>3</td>" in sweep and "<td>24</td><td>3</td>" in sweep
    data = Aggregate.objects.page(Scope.BENCHMARK, "burst")
    docker_8 = data["burst"]["sweep"][0]["points"][0]
    assert docker_8["rate_limited"] == 3 and docker_8["label"] == ""


def test_only_the_default_tier_is_scored(client, burst_run):
    overview = Aggregate.objects.page(Scope.OVERVIEW)

    def units_of(node):
        if node["level"] == "benchmark" and node["key"].endswith("burst"):
            return [child["key"] for child in node["children"]]
        return [key for child in node["children"] for key in units_of(child)]

    scored = units_of(overview["tree"])
    assert scored and all(key.endswith("8") for key in scored)


def test_limits_are_shown_as_published_beside_burst_and_density(client, burst_run):
    html = client.get("/benchmarks/burst/").content.decode()
    assert 'id="limits-table"' in html and "published by the provider" in html
    assert '<a href="https://docker.example/limits" rel="nofollow">' in html
    assert "2026-11-29" in html and "Team" in html
    density = client.get("/benchmarks/density/").content.decode()
    assert "measured (sandboxes reached)" in density
    # Local's three trials reached 6, 7 and 9: the lower median is 7, beside its declared 8.
    assert "<td>8</td>\n<td>7 <small>(2 of 3 trials refused)</small></td>" in density


def test_the_default_tier_alone_is_the_boards_result_not_a_workload(client, burst_run):
    summary = Aggregate.objects.page(Scope.BENCHMARK, "burst")
    assert summary["multi_unit"] is False
    values = {row["provider"]: row["workload_value"] for row in summary["rows"]}
    assert values == {"local": 800.0, "docker": 1400.0}  # each one's 8-tier median
    html = client.get("/benchmarks/burst/").content.decode()
    assert "substituted" not in html and "workload value" not in html
    assert '<a href="?unit=8#burst" class="current">8</a>' in html  # the default tier is shown


def test_the_provider_page_names_its_documented_limits(client, burst_run):
    html = client.get("/providers/docker/").content.decode()
    table = html[html.index('id="provider-limits"') :]
    assert "<th>account tier</th><td>Team</td>" in table
    assert "<th>concurrent sandboxes</th><td>50</td>" in table
    assert "published by the provider" in html
