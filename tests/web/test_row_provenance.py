"""Every row that names a run names the run its provider's numbers came from, and a visitor is
never linked to a run they cannot open."""

import pytest

from boxbench import publishing
from boxbench.leaderboard.materialize import materialize
from tests.support.web import rerun_of_docker_create, rows_of
from tests.web import factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def docker_rerun(published_run):
    """Docker's Create re-measured and published: Create's local row stays on the first run."""
    rerun = rerun_of_docker_create("docker-create-rerun", 5)
    publishing.publish(rerun)
    return rerun


def create_runs(rows: list[list[str]], columns: list[str]) -> dict[str, str]:
    """{provider: run} of the Create rows (benchmark and unit level) of a score table."""
    node, provider, run = (columns.index(c) for c in ("node", "provider", "run"))
    found: dict[str, set] = {}
    for row in rows:
        if row[node].split("/")[1:2] == ["create"]:
            found.setdefault(row[provider], set()).add(row[run])
    assert all(len(runs) == 1 for runs in found.values()), found
    return {p: runs.pop() for p, runs in found.items()}


def test_scores_csv_names_each_providers_own_run(client, docker_rerun):
    header, *rows = rows_of(client.get("/scores.csv"))
    runs = create_runs(rows, header)
    assert runs["docker"] == str(docker_rerun.id)
    assert runs["local"] == runs["boat"] == factory.RUN_ID


def test_the_apis_overview_table_names_each_providers_own_run(client, docker_rerun):
    table = client.get("/api/v1/overview").json()["table"]
    runs = create_runs(table["rows"], table["columns"])
    assert runs["docker"] == str(docker_rerun.id)
    assert runs["local"] == runs["boat"] == factory.RUN_ID
    assert runs.get("tiny", "") == ""  # refused: no run holds a trial of it


def test_the_score_trees_row_links_both_runs_with_the_providers_each_feeds(client, docker_rerun):
    page = client.get("/?open=sandbox_operations").content.decode()
    row = page[page.index('data-path="sandbox_operations/create"') :]
    row = row[: row.index("</tr>")]
    assert f'href="/runs/{docker_rerun.id}/"' in row and f'href="/runs/{factory.RUN_ID}/"' in row
    assert "(Docker)" in row and "(Boat, Local sandbox)" in row


def test_the_overviews_benchmark_list_names_each_run_with_the_providers_it_feeds(
    client, docker_rerun
):
    page = client.get("/").content.decode()
    item = page[page.index('<li><a href="/benchmarks/create/">') :]
    item = item[: item.index("</li>")]
    assert f'href="/runs/{docker_rerun.id}/"' in item and f'href="/runs/{factory.RUN_ID}/"' in item
    assert "for Docker" in item and "for Boat, Local sandbox" in item


def unpublished_rerun(original):
    """A re-run of docker on Create that failed its audit: it stays unpublished."""
    rerun = rerun_of_docker_create(
        "failed-rerun",
        5,
        manifest={
            "rerun_of": {"run": str(original.id), "provider": "docker", "benchmark": "create"}
        },
    )
    materialize()  # the original's page lists its re-runs as of the last publication
    return rerun


def test_a_visitor_sees_an_unpublished_rerun_named_not_linked(client, published_run):
    rerun = unpublished_rerun(published_run)
    page = client.get(f"/runs/{published_run.id}/").content.decode()
    reruns = page[page.index('id="rerun-pairs"') :]
    assert "failed-rerun (not published)" in reruns
    assert f"/runs/{rerun.id}/" not in page
    assert client.get(f"/runs/{rerun.id}/").status_code == 404


def test_a_reviewer_who_may_open_unpublished_runs_gets_the_link(staff_client, published_run):
    rerun = unpublished_rerun(published_run)
    page = staff_client.get(f"/runs/{published_run.id}/").content.decode()
    assert f'href="/runs/{rerun.id}/">failed-rerun</a>' in page
    assert staff_client.get(f"/runs/{rerun.id}/").status_code == 200


def test_a_published_reruns_page_names_its_unpublished_original_without_a_link(
    client, imported_run
):
    rerun = rerun_of_docker_create(
        "published-rerun",
        5,
        manifest={
            "rerun_of": {"run": str(imported_run.id), "provider": "docker", "benchmark": "create"}
        },
    )
    publishing.run_audit(rerun)
    publishing.publish(rerun)
    page = client.get(f"/runs/{rerun.id}/").content.decode()
    assert f"run {imported_run.id} (not published) held back" in page
    assert f'href="/runs/{imported_run.id}/"' not in page
