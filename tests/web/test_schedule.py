"""The run page discloses its schedule: the seed, each chain's shuffled order, and per pair the
audit's first round against the later rounds, with both medians and the test's numbers."""

import pytest

from boxbench.models import Run
from boxbench.templatetags.boxbench_format import num
from tests.support.web import html_table
from tests.web import factory

pytestmark = pytest.mark.django_db

RUN_URL = f"/runs/{factory.RUN_ID}/"


def test_a_visitor_sees_the_seed_and_each_chains_shuffled_order(client, published_run):
    chains = {
        "local": {"order": [["create", 2], ["cpu", 1], ["create", 1], ["cpu", 2]]},
        "docker": {"order": [["cpu", 1], ["create", 1]], "stopped": "R401 at create"},
    }
    Run.objects.filter(id=published_run.id).update(
        manifest={**published_run.manifest, "chains": chains}
    )
    page = client.get(RUN_URL).content.decode()
    assert '<b id="schedule-seed">7</b>' in page
    local = page.split('id="chain-local"')[1].split("</details>")[0]
    steps = ["create, round 2", "cpu, round 1", "create, round 1", "cpu, round 2"]
    assert [f"<li>{s}</li>" in local for s in steps] == [True] * 4
    assert local.index(steps[0]) < local.index(steps[1]) < local.index(steps[3])
    docker = page.split('id="chain-docker"')[1].split("</details>")[0]
    assert "2 steps in this order (stopped early: R401 at create)" in " ".join(docker.split())


def test_each_pair_shows_the_audits_first_round_against_the_rest(client, published_run):
    response = client.get(RUN_URL)
    rows = html_table(response, "first-round")
    header, body = rows[0], rows[1:]
    assert header[:3] == ["provider", "benchmark", "first round: trials"]
    pairs = sorted(
        published_run.audit_report["pairs"], key=lambda p: (p["provider"], p["benchmark"])
    )
    assert [row[:2] for row in body] == [[p["provider"], p["benchmark"]] for p in pairs]
    for row, pair in zip(body, pairs, strict=True):
        check = pair["checks"]["first_round"]
        details = check["details"]
        assert row[2:9] == [
            str(details["n_a"]),
            num(details["median_a"]),
            str(details["n_b"]),
            num(details["median_b"]),
            num(check["effect"]),
            num(check["p"]),
            num(check["q"]),
        ]
        # The fixture's trials run in four rounds: the first is about a quarter of them.
        assert 0.15 < details["n_a"] / (details["n_a"] + details["n_b"]) < 0.35
    # Folded, so a long audit keeps the page short; its summary counts what it holds.
    failing = sum(p["checks"]["first_round"]["verdict"] == "fail" for p in pairs)
    summary = response.content.decode().split('id="first-round-details"><summary>')[1]
    summary = " ".join(summary.split("</summary>")[0].split())
    assert summary == (
        f"First round against the later ones: {len(pairs)} pairs, "
        f"{failing} failing the audit's check"
    )


def test_a_run_without_a_seed_or_chains_says_so(client, published_run):
    manifest = {k: v for k, v in published_run.manifest.items() if k != "seed"}
    Run.objects.filter(id=published_run.id).update(manifest=manifest)
    page = client.get(RUN_URL).content.decode()
    assert "This run records\nno schedule seed" in page
    assert "No chain order recorded." in page
