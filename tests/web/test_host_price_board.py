"""A self-hosted provider priced by its operator (runner/host_price.py) is ranked on the cost
views once its run is published; without a price its times are still ranked, the Cost view says
"self-hosted: no provider price", and only staff read which setting would fill it."""

import csv
import io
import re

import pytest

from boxbench.models import Provider
from runner.catalog import provider_definition
from runner.declarations import get_declaration
from tests.support.web import explain_failures, shown_labels

pytestmark = pytest.mark.django_db

HOST_PRICE = {
    "BOXBENCH_HOST_PRICE_PER_HOUR": "0.0832",
    "BOXBENCH_HOST_PRICE_SOURCE": "AWS on-demand price of t3.large in us-east-1",
    "BOXBENCH_HOST_PRICE_DATE": "2026-12-01",
    "BOXBENCH_JOB_HOST_CPUS": "2",
}


def declare_self_hosted(monkeypatch, env: dict):
    """Give the fixture's local and docker the pricing their real declarations load with."""
    for name in HOST_PRICE:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for slug in ("local", "docker"):
        values = provider_definition(slug, get_declaration(slug)).values
        Provider.objects.filter(slug=slug).update(
            pricing=values["pricing"], pricing_digest=values["pricing_digest"]
        )


def publish(run):
    from boxbench import publishing

    explain_failures(run)
    publishing.publish(run)


def cost_scores(client) -> dict[str, float]:
    """The overview's Workload Cost Score, by provider slug."""
    rows = csv.DictReader(io.StringIO(client.get("/scores.csv").content.decode()))
    return {
        row["provider"]: float(row["score"])
        for row in rows
        if (row["level"], row["node"]) == ("section", "workload_cost")
    }


def test_without_a_host_price_times_are_ranked_and_only_the_cost_view_says_so(
    client, imported_run, monkeypatch
):
    declare_self_hosted(monkeypatch, {})
    publish(imported_run)
    time_view = client.get("/benchmarks/deepswe/")
    shown = shown_labels(time_view)
    assert "Local sandbox" not in shown and "Docker" not in shown  # ranked on time
    assert "BOXBENCH_" not in time_view.content.decode()
    cost_view = client.get("/benchmarks/deepswe/?view=cost")
    shown = shown_labels(cost_view)
    for name in ("Local sandbox", "Docker"):
        label, why = shown[name][0]
        assert label == "Not Displayed" and why.startswith("Self-hosted: no provider price.")
    assert "Boat" not in shown  # priced by its own bill: ranked, nothing to say
    # Which setting would price the host is for the operator, never a visitor.
    assert "BOXBENCH_" not in cost_view.content.decode()
    scores = cost_scores(client)
    assert scores["boat"] == 100 and scores.get("local", 0) == 0 and scores.get("docker", 0) == 0


def test_staff_see_which_setting_would_price_a_self_hosted_provider(
    staff_client, imported_run, monkeypatch
):
    declare_self_hosted(monkeypatch, {})
    publish(imported_run)
    page = staff_client.get("/benchmarks/deepswe/?view=cost").content.decode()
    hints = re.search(r'<p class="hint staff-only" id="cost-hints">(.*?)</p>', page, re.S)
    assert hints and "<b>Local sandbox</b>: Set BOXBENCH_HOST_PRICE_PER_HOUR" in hints.group(1)
    assert "<b>Docker</b>: Set BOXBENCH_HOST_PRICE_PER_HOUR" in hints.group(1)
    assert "Boat" not in hints.group(1)


def test_a_declared_host_price_ranks_local_and_docker_on_cost(client, imported_run, monkeypatch):
    declare_self_hosted(monkeypatch, HOST_PRICE)
    publish(imported_run)
    shown = shown_labels(client.get("/benchmarks/deepswe/"))
    assert "Local sandbox" not in shown and "Docker" not in shown  # ranked bars, no label
    scores = cost_scores(client)
    assert scores["local"] > 0 and scores["docker"] > 0
    page = client.get("/providers/local/").content.decode()
    assert "Declared by the operator (BOXBENCH_HOST_PRICE_PER_HOUR)" in page
    assert "AWS on-demand price of t3.large in us-east-1" in page and "2026-12-01" in page
