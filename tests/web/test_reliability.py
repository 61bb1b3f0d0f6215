"""The Reliability view (/reliability/, /reliability.csv, /api/v1/reliability): failure rates per
provider and operation as a reader sees them, counted once at publication, causes kept private."""

import csv
import io

import pytest
from django.db.models import Max

from boxbench import publishing
from boxbench.models import (
    Benchmark,
    Provider,
    RunReliability,
    Trial,
    TrialState,
    UnsuccessfulCount,
)
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db

# Words of the causes added below: none may leave the private evidence.
PRIVATE_WORDS = ("KeyError", "overran its 300 s", "HTTP 503 from tiny", "quota of 2")


@pytest.fixture
def failing_run(imported_run):
    """The fixture run with failures of every kind added on Create, then published: local gets
    a burst (one request rate-limited, one never ready), one failure of ours and one destroy cut
    short, and two failures an imported file gives only as counts; Tiny Cloud two failed creates."""
    run = imported_run
    create = Benchmark.objects.get(slug="create")
    unit = create.units.first()
    local, tiny = Provider.objects.get(slug="local"), Provider.objects.get(slug="tiny")
    seq = Trial.objects.filter(run=run).aggregate(Max("seq"))["seq__max"]
    requests = [
        {"outcome": "ok", "created_ms": 5.0, "ready_ms": 9.0, "cause": ""},
        {"outcome": "rate_limited", "created_ms": None, "ready_ms": None, "cause": "quota of 2"},
        {"outcome": "stuck", "created_ms": 6.0, "ready_ms": None, "cause": "never ready"},
    ]
    added = [
        (local, "provider_failure", "provider", "2 of 3 requests failed", requests),
        (local, "benchmark_error", "benchmark", "the procedure raised KeyError: 'x'", []),
        (local, "provider_failure", "unknown", "cut short: destroy overran its 300 s limit", []),
        (tiny, "provider_failure", "provider", "create: HTTP 503 from tiny", []),
        (tiny, "provider_failure", "provider", "create: HTTP 503 from tiny", []),
    ]
    for i, (provider, outcome, owner, cause, reqs) in enumerate(added, start=seq + 1):
        Trial.objects.create(
            run=run,
            benchmark=create,
            unit=unit,
            provider=provider,
            round=1,
            seq=i,
            state=TrialState.DONE,
            outcome=outcome,
            owner=owner,
            cause=cause,
            requests=reqs,
        )
    UnsuccessfulCount.objects.create(
        run=run,
        benchmark=create,
        unit=unit,
        provider=local,
        outcomes={"provider_failure": 2, "excluded": 1},
    )
    explain_failures(run)
    return publishing.publish(run)


def csv_rows(client) -> dict[tuple[str, str], dict[str, str]]:
    response = client.get("/reliability.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    return {(row["provider"], row["operation"]): row for row in rows}


def test_the_csv_counts_every_attempt_by_operation_owner_and_class(client, failing_run):
    rows = csv_rows(client)
    create = rows[("local", "create")]
    # 100 creates of the fixture, 3 requests of the burst, and the two failed trials' creates.
    assert create["attempts"] == "105" and create["provider failures"] == "1"
    assert create["failed, rate_limited"] == "1"
    assert (create["failure rate"], create["ci_low"], create["ci_high"]) == (
        "0.0095",
        "0.0017",
        "0.0520",
    )
    readiness = rows[("local", "readiness")]
    assert readiness["attempts"] == "104" and readiness["failed, stuck"] == "1"
    command = rows[("local", "command")]
    # Our own failure is counted by owner, and not in the provider's rate.
    assert command["failed, owner benchmark"] == "1" and command["provider failures"] == "0"
    destroy = rows[("local", "destroy")]
    assert destroy["failed, owner unknown"] == "1" and destroy["failed, timeout"] == "1"
    every = rows[("local", "all")]
    assert every["attempts"] == "415" and every["provider failures"] == "3"
    assert every["failures on no operation"] == "2"
    assert rows[("tiny", "all")]["label"] == "Not Measured"
    assert rows[("tiny", "all")]["failure rate"] == ""
    assert rows[("docker", "create")]["failed, server_error"] == "1"


def test_the_page_shows_rates_intervals_and_not_measured(client, failing_run):
    html = client.get("/reliability/").content.decode()
    assert "Reliability: failure rates by provider and operation" in html
    assert "0.7 %" in html and "[0.2 %, 2.1 %]" in html  # local, every operation: 3 of 415
    assert "Not Measured <small>(n=2)</small>" in html  # Tiny Cloud's two creates
    assert 'id="history-local"' in html and "dashboard-fixture" in html
    for word in PRIVATE_WORDS:
        assert word not in html


def test_the_api_answers_the_same_figures_without_causes(client, failing_run):
    answer = client.get("/api/v1/reliability").json()
    assert answer["kind"] == "reliability" and answer["page"]["floor"] == 20
    local = next(p for p in answer["page"]["providers"] if p["provider"] == "local")
    assert local["operations"]["destroy"]["by_owner"]["unknown"] == 1
    assert local["overall"]["ci_high"] == pytest.approx(0.021035, abs=1e-6)
    assert [run["run_name"] for run in local["history"]] == ["dashboard-fixture"]
    text = client.get("/api/v1/reliability").content.decode()
    for word in PRIVATE_WORDS:
        assert word not in text


def test_the_overview_and_provider_page_carry_the_failure_rate(client, failing_run):
    overview = client.get("/").content.decode()
    assert 'id="overview-reliability"' in overview and "0.7 %" in overview
    provider = client.get("/providers/local/").content.decode()
    assert 'id="provider-reliability"' in provider and "[0.2 %, 2.1 %]" in provider
    assert 'href="/reliability/"' in provider  # the site's navigation


def test_counts_are_taken_once_at_publication_and_read_back(client, failing_run, page_queries):
    stored = RunReliability.objects.get(run=failing_run)
    assert stored.counts["local"]["unplaced"] == 2
    with page_queries() as queries:
        assert client.get("/reliability/").status_code == 200
    assert not [q for q in queries if "boxbench_trial" in q]
    # A later publication adds up the stored counts: it does not count the trials again.
    Trial.objects.filter(run=failing_run, provider__slug="tiny").delete()
    publishing.rematerialize()
    assert csv_rows(client)[("tiny", "create")]["attempts"] == "2"


def test_nothing_published_says_so_and_the_csv_is_a_404(client, db):
    assert "No published results yet" in client.get("/reliability/").content.decode()
    assert client.get("/reliability.csv").status_code == 404
    assert client.get("/api/v1/reliability").status_code == 404
