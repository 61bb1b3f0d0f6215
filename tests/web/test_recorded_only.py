"""A benchmark recorded without charting it (Destroy, `charted=False`): its numbers are on its
pages and downloads, with no chart and no part in any score (docs/methodology.md, "Scores and
ranks")."""

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Benchmark, Scope
from tests.support.web import explain_failures, figure, rows_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def create_recorded_only(imported_run):
    Benchmark.objects.filter(slug="create").update(charted=False)
    explain_failures(imported_run)
    return publishing.publish(imported_run)


def test_a_recorded_only_benchmark_shows_its_table_without_a_chart(client, create_recorded_only):
    for path in ("/benchmarks/create/", "/benchmarks/create/units/create/"):
        response = client.get(path)
        page = response.content.decode()
        assert "is recorded, not charted" in page, path
        for chart in ("metric-chart", "stage-chart", "distribution-chart"):
            assert figure(response, chart) is None, (path, chart)
        assert 'id="unit-table"' in page, path
    rows = rows_of(client.get("/benchmarks/create.csv"))
    assert [r[0] for r in rows[1:]] == ["local", "boat", "docker", "tiny"]


def test_a_recorded_only_benchmark_adds_nothing_to_any_score(client, create_recorded_only):
    tree = Aggregate.objects.page(Scope.OVERVIEW)["tree"]
    operations = next(s for s in tree["children"] if s["key"] == "sandbox_operations")
    assert operations["children"] == [] and operations["scores"] == {}
    rows = rows_of(client.get("/scores.csv"))
    assert not [r for r in rows if "create" in r[1]]


def test_a_charted_benchmark_keeps_its_chart_and_score(client, published_run):
    response = client.get("/benchmarks/create/")
    assert figure(response, "metric-chart") is not None
    assert "is recorded, not charted" not in response.content.decode()
    assert [r for r in rows_of(client.get("/scores.csv")) if "create" in r[1]]


def test_a_recorded_only_benchmark_has_no_history_chart_and_no_change_flags(
    client, create_recorded_only
):
    assert not Aggregate.objects.filter(scope=Scope.HISTORY, key="create").exists()
    response = client.get("/benchmarks/create/")
    assert figure(response, "history-chart") is None
    assert 'id="history"' not in response.content.decode()
