"""Nothing vanishes: a provider whose pair the audit held back keeps its place on every board
with the check and the run that says so, earns no rank and no points, and no competitor's badge
says "#1 of 1" over it (boxbench/leaderboard/withheld.py)."""

import csv
import io
import re

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Scope
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


@pytest.fixture
def local_held_back(imported_run):
    """The fixture's Create trials drift by design: every check is explained but local's, whose
    pair stays held back when the run is published."""
    failing = explain_failures(imported_run, held_back=("local", "create"))
    assert ("local", "create", "trend") in failing
    return publishing.publish(imported_run)


def test_the_benchmark_page_keeps_the_held_back_provider_with_its_check_and_run(
    client, local_held_back
):
    summary = Aggregate.objects.page(Scope.BENCHMARK, "create")
    assert "local" not in {r["provider"] for r in summary["rows"]}  # no number published
    [row] = summary["held_back"]
    assert (row["provider"], row["checks"], row["run"]) == (
        "local",
        ["trend"],
        str(local_held_back.id),
    )
    page = client.get("/benchmarks/create/").content.decode()
    assert _table_row(page, "unit-table", "local") == [
        "local",
        "",  # no rank
        "held back by the audit (trend), see the run "
        f'<a href="/runs/{local_held_back.id}/">dashboard-fixture</a>',
        "0",  # no trial counted
        *[""] * 7,  # no median, interval, tail or mean, so no unit either
    ]
    assert 'id="held-back-local"' not in page  # a row of the table, not a list beside it
    # The unit's own page lists it in the same table.
    unit = client.get("/benchmarks/create/units/create/").content.decode()
    assert (
        "held back by the audit (trend), see the run" in _table_row(unit, "unit-table", "local")[2]
    )
    rows = list(csv.reader(io.StringIO(client.get("/benchmarks/create.csv").text)))
    local = next(r for r in rows if r[0] == "local")
    assert local[1:4] == ["", "Held Back", ""]  # no rank, its label, no value
    assert client.get(f"/runs/{local_held_back.id}/").status_code == 200  # a visitor may see it


def test_its_badge_says_held_back_and_no_rival_is_crowned_one_of_one(client, local_held_back):
    response = client.get("/providers/local/create.svg")
    assert response.status_code == 200
    assert "held back by the audit" in response.content.decode()
    summary = Aggregate.objects.page(Scope.BENCHMARK, "create")
    first = next(r for r in summary["rows"] if r["rank"] == 1)
    badge = client.get(f"/providers/{first['provider']}/create.svg").content.decode()
    assert "#1 · 1 held back" in badge and " of " not in badge.split("#1")[1]


def test_it_earns_no_points_and_the_overview_and_provider_page_say_held_back(
    client, local_held_back
):
    tree = Aggregate.objects.page(Scope.OVERVIEW)["tree"]
    operations = next(c for c in tree["children"] if c["key"] == "sandbox_operations")
    create = next(c for c in operations["children"] if c["key"] == "create")
    assert "local" not in create["scores"] and "local" not in create["ranks"]
    page = client.get("/").content.decode()
    assert '<td class="held-back" title="Held back by the audit: no score, no rank.">' in page
    provider = client.get("/providers/local/").content.decode()
    assert "Held Back" in provider and "held back by the audit (trend), see the run" in provider


@pytest.fixture
def create_all_held_back(imported_run):
    """Published with no check resolved: every provider's Create pair fails its trend check."""
    publishing.run_audit(imported_run)
    failing = {(p, b) for p, b, _ in publishing.failing_checks(imported_run.audit_report)}
    assert failing == {("boat", "create"), ("docker", "create"), ("local", "create")}
    return publishing.publish(imported_run)


def test_a_benchmark_whose_every_pair_is_held_back_keeps_its_page_and_its_place(
    client, create_all_held_back
):
    page = client.get("/benchmarks/create/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Every provider's pair on this benchmark is held back by\nthe audit" in text
    for provider in ("boat", "docker", "local"):
        row = _table_row(text, "unit-table", provider)
        assert row[1] == ""  # no rank
        assert row[2].startswith("held back by the audit (trend), see the run <a href=")
        assert row[4] == ""  # no median
    assert 'id="verdicts"' not in text and "From run" not in text  # nothing measured to cite
    unit = client.get("/benchmarks/create/units/create/")
    assert unit.status_code == 200 and "<td>" in unit.content.decode()
    trials = unit.content.decode().split('id="trials-table"')[1].split("</table>")[0]
    assert "<tbody></tbody>" in trials  # none of the held-back trials is listed
    index = client.get("/benchmarks/").content.decode()
    assert '<a href="/benchmarks/create/">Create</a>' in index
    overview = client.get("/").content.decode()
    listed = overview.split('id="all-held-back-create"')[1].split("</li>")[0]
    assert "every pair\nheld back by the audit (Boat, Docker, Local sandbox)" in listed
    provider = client.get("/providers/docker/").content.decode()
    assert "held back by the audit (trend), see the run" in provider
    assert "held back by the audit" in client.get("/providers/docker/create.svg").text


def _table_row(page: str, table_id: str, provider: str) -> list[str]:
    """The cells (inner HTML, stage columns left out) of the provider's row in a page's table."""
    table = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    for row in re.findall(r"<tr>(.*?)</tr>", table, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        if cells and cells[0] == provider:
            return cells[:11]
    raise AssertionError(f"no row of {provider} in {table_id}")
