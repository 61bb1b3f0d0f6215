"""The Isolation benchmark's pages: its own page and CSV show each probe declared against
detected per provider, the provider page shows them beside the speed results, and it is in no
score, comparison or audit (docs/methodology.md, "Isolation probes")."""

import html
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command

from boxbench import publishing
from boxbench.models import Aggregate, Evidence, EvidenceKind, Run, Scope, Trial
from boxbench.views.tables import header
from runner.benchmarks import isolation_probes as probes
from tests.support.web import explain_failures, html_table, rows_of
from tests.web import factory

pytestmark = pytest.mark.django_db

EGRESS_WHY = "cannot tell: no answer within 3 s (depends on the job host's network) (timeout)"
# provider -> one metrics dict per trial; docker's CPU burn varies, its egress gave no reading.
READINGS = {
    "local": [
        {"cpus_visible": 2, "cpus_enforced": 1.5, "refused_ptrace": 0, "egress_open": 0},
        {"cpus_visible": 2, "cpus_enforced": 1.5, "refused_ptrace": 0, "egress_open": 0},
        {"cpus_visible": 2, "cpus_enforced": 1.5, "refused_ptrace": 0, "egress_open": 0},
    ],
    "docker": [
        {"cpus_visible": 64, "cpus_enforced": 2.1, "refused_ptrace": 0},
        {"cpus_visible": 64, "cpus_enforced": 1.9, "refused_ptrace": 0},
        {"cpus_visible": 64, "cpus_enforced": 2.0, "refused_ptrace": 0},
    ],
}


def isolation_definition() -> dict:
    units = {p.name: {"unit": p.unit, "clock": "guest"} for p in probes.PROBES}
    return {
        "slug": "isolation",
        "version": "1",
        "title": "Isolation",
        "description": "What a sandbox really is.",
        "section": "machine_performance",
        "metric": "probes_answered",
        "unit": "readings",
        "direction": "higher",
        "statistic": "probe",
        "clock": "guest",
        "cpus": 2,
        "memory_mib": 4096,
        "trials_per_unit": 3,
        "ranking_floor": 3,
        "required_capabilities": ["exec"],
        "stage_names": [],
        "charted": False,
        "steps_include_create_or_build": False,
        "units": [{"slug": "default", "title": "Default sandbox", "definition": {}, "digest": ""}],
        "measurements": {
            "metrics": {"probes_answered": {"unit": "readings", "clock": "guest"}, **units},
            "stages": {},
        },
    }


def isolation_trial(provider: str, seq: int, metrics: dict) -> str:
    began = datetime(2026, 11, 1, 5, tzinfo=UTC) + timedelta(seconds=seq)
    return json.dumps(
        {
            "type": "trial",
            "benchmark": "isolation",
            "benchmark_version": "1",
            "unit": "default",
            "provider": provider,
            "trial": str(uuid.UUID(int=10**6 + seq)),
            "round": 1,
            "seq": 10**6 + seq,
            "attempt": 1,
            "replaces": None,
            "batch": f"{provider}-iso",
            "outcome": "success",
            "owner": "",
            "cause": "",
            "job_host": "job-1",
            "started_at": began.isoformat().replace("+00:00", "Z"),
            "ended_at": (began + timedelta(seconds=1)).isoformat().replace("+00:00", "Z"),
            "in_flight": 0.0,
            "placement": {"cpu_count": 2},
            "host_load": {"cpu_peak": 0.95},
            "metrics": {**metrics, "probes_answered": len(metrics)},
            "stages": {},
            "cost_usd": 0.0,
            "clock_gates": {},
        }
    )


def import_with_isolation(path, timed: bool) -> Run:
    """The dashboard fixture run with Isolation trials added (timed) or alone (not timed),
    written to `path` and imported."""
    lines = factory.run_lines(trials_per_cell=3)
    header = json.loads(lines[0])
    header["benchmarks"] = [*(header["benchmarks"] if timed else []), isolation_definition()]
    lines = [json.dumps(header), *(lines[1:] if timed else [])]
    seq = 0
    for provider, trials in READINGS.items():
        for metrics in trials:
            seq += 1
            lines.append(isolation_trial(provider, seq, metrics))
    path.write_text("\n".join(lines) + "\n")
    call_command("bench", "import", str(path))
    return Run.objects.get(id=factory.RUN_ID)


@pytest.fixture
def imported(tmp_path):
    """The dashboard fixture run with Isolation trials, imported and not yet audited."""
    run = import_with_isolation(tmp_path / "run.jsonl", timed=True)
    for trial in Trial.objects.filter(
        run=run, benchmark__slug="isolation", provider__slug="docker"
    ):
        Evidence.objects.create(
            trial=trial,
            kind=EvidenceKind.ISOLATION_PROBE,
            data={"probe": "egress", "missing": {"egress_open": EGRESS_WHY}},
        )
    return run


@pytest.fixture
def isolation_run(imported):
    explain_failures(imported)
    publishing.publish(imported)
    return imported


def probe_rows(rows, probe):
    header = rows[0]
    return {
        r[header.index("provider")]: dict(zip(header, r, strict=True))
        for r in rows[1:]
        if r[0] == probe
    }


def test_the_csv_carries_each_probe_declared_against_detected_per_provider(client, isolation_run):
    rows = rows_of(client.get("/benchmarks/isolation.csv"))
    assert rows[0] == [
        "probe",
        "title",
        "provider",
        "unit",
        "expected",
        "detected",
        "min",
        "max",
        "n",
        "why no reading",
    ]
    burn = probe_rows(rows, "cpus_enforced")
    assert burn["docker"] | {} == {
        "probe": "cpus_enforced",
        "title": "CPUs delivered",
        "provider": "docker",
        "unit": "CPU-s/s",
        "expected": "at most 2",
        "detected": "2",
        "min": "1.9",
        "max": "2.1",
        "n": "3",
        "why no reading": "",
    }
    assert probe_rows(rows, "cpus_visible")["docker"]["expected"] == "2"
    assert probe_rows(rows, "cpus_visible")["docker"]["detected"] == "64"
    assert probe_rows(rows, "refused_ptrace")["local"]["detected"] == "0"
    egress = probe_rows(rows, "egress_open")
    assert (egress["local"]["detected"], egress["local"]["why no reading"]) == ("0", "")
    assert (egress["docker"]["detected"], egress["docker"]["n"]) == ("", "0")
    assert egress["docker"]["why no reading"] == EGRESS_WHY
    # A probe no trial read says so rather than leaving a silent blank.
    assert probe_rows(rows, "refused_bpf")["local"]["why no reading"] == (
        "no successful trial gave this reading"
    )
    assert len(rows) == 1 + 2 * len(probes.PROBES)


def test_the_page_shows_the_same_rows_and_links_the_methodology(client, isolation_run):
    response = client.get("/benchmarks/isolation/")
    page = response.content.decode()
    assert "Probes, not a race" in page
    assert 'href="/methodology/#isolation-probes"' in page
    assert "metric-chart" not in page and "unit-table" not in page
    table = [[html.unescape(cell) for cell in row] for row in html_table(response, "probe-table")]
    csv_rows = rows_of(client.get("/benchmarks/isolation.csv"))
    assert table[0] == [header(c) for c in csv_rows[0]]  # the page's labels for the CSV's ids
    assert [row[:9] for row in table[1:]] == [row[:9] for row in csv_rows[1:]]
    assert client.get("/benchmarks/isolation/?view=cost").status_code == 404
    assert client.get("/benchmarks/isolation/?unit=nope").status_code == 404


def test_the_provider_page_shows_its_probes_beside_its_speed_results(client, isolation_run):
    response = client.get("/providers/docker/")
    probes_table = html_table(response, "provider-probes")
    by_title = {row[0]: row for row in probes_table[1:]}
    assert by_title["CPUs delivered"][1:] == ["at most 2", "2 CPU-s/s (1.9 – 2.1)", "3"]
    assert by_title["CPUs visible"][1:] == ["2", "64 CPUs", "3"]
    assert html.unescape(by_title["Egress open"][2]) == f"no reading: {EGRESS_WHY}"
    results = html_table(response, "provider-results")
    benchmarks = {row[0] for row in results[1:]}
    assert '<a href="/benchmarks/create/">Create</a>' in benchmarks
    assert not [b for b in benchmarks if "isolation" in b]


def test_it_is_in_no_score_comparison_or_history(client, isolation_run):
    tree = json.dumps(Aggregate.objects.page(Scope.OVERVIEW)["tree"])
    assert "isolation" not in tree
    assert not [r for r in rows_of(client.get("/scores.csv")) if "isolation" in r[1]]
    compared = Aggregate.objects.page(Scope.COMPARE, "docker", "local")
    assert compared["rows"] and not [r for r in compared["rows"] if r["benchmark"] == "isolation"]
    assert Aggregate.objects.page(Scope.HISTORY, "isolation") is None


def test_the_audit_leaves_the_probe_readings_out(imported):
    """A saturated job host (the CPU burn loads it by design) and a reading of 0 answered are no
    reason to hold a probe back: its pairs are not audited, and it publishes. The report still
    lists them, as unassessed with the reason."""
    trials = Trial.objects.filter(run=imported, benchmark__slug="isolation")
    trials.filter(provider__slug="local").update(metrics={"probes_answered": 0})
    report = publishing.run_audit(imported)
    probes = [p for p in report["pairs"] if p["benchmark"] == "isolation"]
    assert {p["provider"] for p in probes} == {"local", "docker"}
    assert {p["verdict"] for p in probes} == {"unassessed"}
    reasons = {c["reason"] for p in probes for c in p["checks"].values()}
    assert reasons == {"probe readings are facts, not timings: no check applies"}
    explain_failures(imported)
    publishing.publish(imported)
    shown = Aggregate.objects.page(Scope.BENCHMARK, "isolation")["probes"]
    assert {r["provider"] for r in shown} == {"local", "docker"}


def test_the_pages_render_every_variable_their_templates_name(client, isolation_run, settings):
    engine = settings.TEMPLATES[0]
    missing = "@@missing %s@@"
    settings.TEMPLATES = [
        {**engine, "OPTIONS": {**engine["OPTIONS"], "string_if_invalid": missing}}
    ]
    cache.clear()
    for url in ("/benchmarks/isolation/", "/providers/docker/", "/providers/local/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "@@missing" not in response.content.decode(), url


def test_with_only_probes_published_compare_offers_nobody_and_says_why(client, tmp_path):
    publishing.publish(import_with_isolation(tmp_path / "probes.jsonl", timed=False))
    assert Aggregate.objects.page(Scope.BENCHMARK, "isolation")  # published, yet not compared
    page = client.get("/compare/").content.decode()
    assert "<option" not in page
    assert "No two providers have published timed results yet" in page
    assert client.get("/compare/?a=docker&b=local").status_code == 404
