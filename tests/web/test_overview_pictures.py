"""The overview's pictures: the score tree's sections as a chart, each
section's headline benchmark as bars with intervals linking to its page, and the run, schedule
seed and job hosts behind each; the numbers are the materialized pages' own."""

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Run, Scope
from tests.support.web import explain_failures, figure

pytestmark = pytest.mark.django_db

JOB_HOSTS = {
    "local": ("job-1", "c6i.large", "us-east-1"),
    "docker": ("job-1", "c6i.large", "us-east-1"),
    "boat": ("job-2", "c6i.large", "us-east-1"),
}


@pytest.fixture
def pictured_run(imported_run):
    """The fixture run with the job hosts its manifest records for each provider."""
    manifest = dict(imported_run.manifest)
    manifest["providers"] = {
        slug: {
            "job_host": host,
            "seq_base": 1_000_000 * (i + 1),
            "job_host_type": kind,
            "job_host_region": region,
        }
        for i, (slug, (host, kind, region)) in enumerate(JOB_HOSTS.items())
    }
    Run.objects.filter(id=imported_run.id).update(manifest=manifest)
    run = Run.objects.get(id=imported_run.id)
    explain_failures(run)
    return publishing.publish(run)


def test_the_score_chart_draws_each_providers_section_scores(client, pictured_run):
    overview = Aggregate.objects.page(Scope.OVERVIEW)
    chart = figure(client.get("/"), "score-chart")
    tree = overview["tree"]
    sections = {c["label"]: c["scores"] for c in tree["children"] if c["scores"]}
    for trace in chart["data"]:
        slug = next(
            s
            for s, p in overview["providers"].items()
            if trace["name"].startswith(p["provider_name"])
        )
        drawn = dict(zip(trace["y"], trace["x"], strict=True))
        assert drawn["Overall"] == tree["scores"].get(slug)
        for label, scores in sections.items():
            assert drawn[label] == scores.get(slug), (slug, label)
    # Providers in overall rank order, as the table's columns.
    assert [t["name"] for t in chart["data"]][-1].startswith("Local")


def test_each_section_has_its_headline_benchmark_with_intervals(client, pictured_run):
    page = client.get("/")
    headlines = Aggregate.objects.page(Scope.OVERVIEW)["headlines"]
    assert [h["benchmark"] for h in headlines] == ["deepswe", "create", "cpu"]
    create = figure(page, "headline-sandbox_operations-chart")
    unit = Aggregate.objects.page(Scope.UNIT, "create", "create")
    ranked = [r for r in unit["rows"] if r["ranked"]]
    assert create["data"][0]["x"] == [r["median"] for r in ranked]
    assert create["data"][0]["error_x"]["visible"] is True
    assert create["data"][0]["error_x"]["array"] == [r["ci_high"] - r["median"] for r in ranked]
    deepswe = figure(page, "headline-workload-chart")
    summary = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    values = [r["workload_value"] for r in summary["rows"] if r["ranked"]]
    assert deepswe["data"][0]["x"] == values
    assert deepswe["data"][0]["error_x"]["visible"] is False  # a workload value has none
    text = page.content.decode()
    for h in headlines:
        assert f'href="/benchmarks/{h["benchmark"]}/">{h["title"]}: every unit' in text


def test_each_headline_names_its_run_seed_and_job_hosts(client, pictured_run):
    text = " ".join(client.get("/").content.decode().split())
    assert (
        f'From run <a href="/runs/{pictured_run.id}/">dashboard-fixture</a>, schedule seed 7'
        in (text)
    )
    assert "job hosts job-1 (c6i.large, us-east-1), job-2 (c6i.large, us-east-1)" in text


def test_a_run_without_recorded_job_hosts_says_so(client, published_run):
    text = " ".join(client.get("/").content.decode().split())
    assert "schedule seed 7, job host not recorded" in text
