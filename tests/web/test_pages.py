import json
import re

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection

from boxbench.leaderboard.materialize import materialize
from boxbench.models import Evidence, Trial
from stats import audit as stats_audit
from stats import summary
from stats.labels import MEANINGS, Label
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"


def figure(response, chart_id):
    found = re.search(
        rf'<script id="{chart_id}-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert found, f"{chart_id} is not on the page"
    return json.loads(found.group(1))


def test_it_shows_an_empty_overview_before_anything_is_published(client, imported_run):
    response = client.get("/")
    assert response.status_code == 200
    assert b"No published results yet; an administrator publishes runs after their audit" in (
        response.content
    )
    assert client.get("/benchmarks/deepswe/units/trace-a/").status_code == 404


def test_it_shows_the_score_tree_with_ranks_and_the_source_run(client, published_run):
    response = client.get("/?open=workload_time,workload_time/deepswe")
    page = response.content.decode()
    assert "Overall Score" in page and "Machine Performance Score" in page
    assert "Composite Workload Time" in page
    assert 'href="/benchmarks/deepswe/units/trace-a/"' in page
    assert f'href="{RUN_URL}"' in page
    # Every row is sent, those below a section folded: the page's script opens the rows the
    # address names, so the cached page is the same whatever is open.
    assert response.content == client.get("/").content
    assert '<tr class="node level-section" data-path="sandbox_operations">' in page
    assert 'data-path="workload_time/deepswe/trace-a" hidden>' in page
    assert 'data-path="sandbox_operations/create" hidden>' in page
    assert '<button type="button" class="toggle" data-path="workload_time/deepswe"' in page


def test_it_shows_the_all_view_with_substitution_notes_and_status_labels(client, published_run):
    response = client.get("/benchmarks/deepswe/")
    page = response.content.decode()
    assert "No successful trials on trace-c" in page
    assert 'title="boxbench does not run this benchmark on this provider yet' in page
    assert "BoxRouter" not in page
    assert "Boat (EU)</b>: Timed from the US job host" in page
    bars = figure(response, "workload-chart")["data"][0]
    assert bars["y"] == ["Local sandbox", "Boat (EU)", "Docker"]
    assert bars["text"][1].endswith(" *")  # Boat's value carries a substituted unit


def test_it_scales_stage_segments_to_the_median_but_labels_them_unscaled(client, published_run):
    response = client.get("/benchmarks/deepswe/?unit=trace-b")
    chart = figure(response, "stage-chart")
    assert [trace["name"] for trace in chart["data"]] == ["setup", "replay", "verify"]
    unit = response.context["unit"]
    for row in (r for r in unit["rows"] if r["ranked"]):
        widths = [t["x"][t["y"].index(_label(row))] for t in chart["data"]]
        labels = [t["text"][t["y"].index(_label(row))] for t in chart["data"]]
        assert sum(widths) == pytest.approx(row["median"])
        assert labels == [_num(row["stage_medians"][s]) for s in ("setup", "replay", "verify")]
        assert sum(row["stage_medians"].values()) != pytest.approx(row["median"])


def _label(row):
    return (
        f"{row['provider_name']} ({row['region_marker']})"
        if row["region_marker"]
        else row["provider_name"]
    )


def _num(value):
    from boxbench.templatetags.boxbench_format import num

    return num(value)


def test_it_shows_a_single_unit_benchmark_as_a_bar_chart_of_the_metric(client, published_run):
    response = client.get("/benchmarks/cpu/")
    bars = figure(response, "metric-chart")["data"][0]
    assert bars["y"][0] == "Local sandbox"  # higher is better: local does the most ops/s
    assert b"stage-chart" not in response.content
    assert b"higher is better" in response.content


def test_it_precomputes_every_derived_view(client, published_run):
    response = client.get("/benchmarks/create/")
    derived = json.loads(
        re.search(
            r'id="derived-data" type="application/json">(.*?)</script>',
            response.content.decode(),
            re.S,
        ).group(1)
    )
    assert derived["stages"] == ["create", "ready"]
    views = derived["rows"][0]["views"]
    assert set(views) == {"create", "ready", "create+ready"}
    assert views["create+ready"]["trials"] == 20 and views["create+ready"]["tail_kind"] == "p95"


def test_it_shows_the_public_the_successful_trials_and_counts_the_others(client, published_run):
    response = client.get("/benchmarks/create/units/create/?provider=docker")
    page = response.content.decode()
    assert "create returned HTTP 503" not in page and "provider_failure" not in page
    assert "<th>owner</th>" not in page and "<th>replaces</th>" not in page
    assert "<td>pass</td>" in page
    trials = response.context["trials"]
    assert len(trials) == 20 and {t["outcome"] for t in trials} == {"success"}
    attempts = response.context["attempts"]
    assert attempts.columns[:3] == ["provider", "success", "provider failure"]
    docker = next(r for r in attempts.rows if r[0] == "docker")
    assert docker == ["docker", "20", "1", "0", "0", "0", "1"]
    assert 'id="attempts-table"' in page
    assert figure(response, "distribution-chart")["data"][0]["type"] == "box"


def test_it_shows_evidence_viewers_every_trial_with_outcome_cause_and_link(
    staff_client, published_run
):
    response = staff_client.get("/benchmarks/create/units/create/?provider=docker")
    page = response.content.decode()
    assert "provider_failure" in page and "create returned HTTP 503" in page
    assert "<th>owner</th>" in page and "<th>replaces</th>" in page
    trials = response.context["trials"]
    assert len(trials) == 21 and {t["provider__slug"] for t in trials} == {"docker"}


def test_the_pages_state_the_caps_the_code_applies(client, published_run, monkeypatch):
    unit = client.get("/benchmarks/create/units/create/").content.decode()
    assert f"at most {summary.MAX_POINTS} per provider" in unit
    run = client.get(RUN_URL).content.decode()
    assert f"fewer than {stats_audit.MIN_SUCCESSES} successful trials are unassessed" in run
    # The caps come from the code that applied them, so a new cap shows after the next publication.
    monkeypatch.setattr(summary, "MAX_POINTS", 250)
    materialize()
    again = client.get("/benchmarks/create/units/create/").content.decode()
    assert "at most 250 per provider" in again


def test_it_pages_the_trials_table(client, published_run):
    first = client.get("/benchmarks/deepswe/units/trace-a/")
    assert first.context["has_next"] is False and len(first.context["trials"]) == 60
    assert client.get("/benchmarks/deepswe/units/trace-a/?page=0").status_code == 404
    assert client.get("/benchmarks/deepswe/units/trace-a/?page=x").status_code == 404
    assert client.get("/benchmarks/deepswe/?unit=nope").status_code == 404


def test_it_shows_a_providers_results_declaration_and_pricing(client, published_run):
    page = client.get("/providers/boat/").content.decode()
    assert "DeepSWE replay" in page and "Trace C" in page and "Not Measured" in page
    assert "per_vcpu_second" in page and "&quot;capabilities&quot;" in page
    assert client.get("/providers/nobody/").status_code == 404


def test_a_providers_unit_label_says_what_it_means(client, published_run):
    page = client.get("/providers/boat/").content.decode()
    assert f'<td title="{MEANINGS[Label.NOT_MEASURED]}">Not Measured</td>' in page


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/benchmarks/deepswe/",
        "/benchmarks/deepswe/units/trace-a/",
        "/providers/local/",
        "/benchmarks/deepswe.csv",
        "/scores.csv",
        "/benchmarks/deepswe/units/trace-a.csv",
        RUN_URL,
    ],
)
def test_it_serves_each_page_in_three_queries_or_fewer(client, published_run, path, page_queries):
    # A unit page numbers its trials in a fourth: one pass over the run's seqs for the page
    # (TrialQuerySet.positions), where a count per row read a 1M-trial run 100 times.
    budget = 4 if path == "/benchmarks/deepswe/units/trace-a/" else 3
    with page_queries() as queries:
        assert client.get(path).status_code == 200
    assert len(queries) <= budget, queries


def test_it_hides_an_unpublished_run_from_visitors_and_outsiders(client, imported_run):
    assert client.get(RUN_URL).status_code == 404
    assert client.get(RUN_URL + "raw.jsonl").status_code == 404
    assert client.get(RUN_URL + "raw.csv").status_code == 404


def test_it_hides_an_unpublished_run_from_an_outsider(outsider_client, imported_run):
    assert outsider_client.get(RUN_URL).status_code == 404


def test_it_shows_staff_the_unpublished_run_with_progress(staff_client, imported_run):
    response = staff_client.get(RUN_URL)
    assert response.status_code == 200
    assert b"not published" in response.content
    assert b"280 of 281 trials finished" not in response.content
    assert b"281 of 281 trials finished" in response.content


def test_it_shows_the_audit_and_its_resolutions_to_everyone(client, published_run):
    page = client.get(RUN_URL).content.decode()
    assert "local / create</b> — fail" in page
    assert "Effect explained in the record: Create slows down over the run" in page
    assert "detectable effect" in page and "unassessed" in page
    assert "Private evidence" not in page


def test_it_shows_private_evidence_only_with_its_permission(outsider_client, published_run):
    trial = Trial.objects.filter(run=published_run).first()
    Evidence.objects.create(trial=trial, kind="readiness", data={"attempts": 3, "secret": "tti"})
    assert b"Private evidence" not in outsider_client.get(RUN_URL).content
    outsider_client.logout()
    from django.contrib.auth.models import Permission, User

    boss = User.objects.create_user("boss", is_staff=True)
    outsider_client.force_login(boss)
    assert b"Private evidence" not in outsider_client.get(RUN_URL).content
    boss.user_permissions.add(Permission.objects.get(codename="view_private_evidence"))
    page = outsider_client.get(RUN_URL).content.decode()
    assert "Private evidence" in page and "readiness" in page and "attempts" in page


def test_it_renders_the_methodology(client, settings, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "methodology.md").write_text(
        "# Methodology\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    settings.BASE_DIR = tmp_path
    page = client.get("/methodology/").content.decode()
    assert '<h1 id="methodology">Methodology</h1>' in page and "<td>1</td>" in page


def test_the_methodology_page_is_cached_until_its_file_changes(
    client, settings, tmp_path, monkeypatch
):
    import os

    from boxbench.views import pages

    source = tmp_path / "docs" / "methodology.md"
    source.parent.mkdir()
    source.write_text("# First\n")
    settings.BASE_DIR = tmp_path
    assert "First" in client.get("/methodology/").content.decode()
    with monkeypatch.context() as patched:
        patched.setattr(pages, "render", lambda *a, **k: pytest.fail("rendered again"))
        assert "First" in client.get("/methodology/").content.decode()
    moved = source.stat().st_mtime_ns + 1_000_000
    source.write_text("# Second\n")
    os.utime(source, ns=(moved, moved))
    # Rendered from the new file, whatever the cache and the render memo held.
    assert "Second" in client.get("/methodology/").content.decode()
    source.unlink()
    assert client.get("/methodology/").status_code == 200


def test_it_serves_a_visitor_the_page_rendered_for_the_current_publication(
    client, published_run, page_queries
):
    first = client.get("/benchmarks/create/").content
    with page_queries() as queries:
        assert client.get("/benchmarks/create/").content == first
    assert queries == []  # the page and the publication version both come from the cache
    from boxbench.models import Benchmark

    Benchmark.objects.filter(slug="create").update(title="Create, renamed")
    materialize()  # a new publication: new version, fresh render
    assert b"Create, renamed" in client.get("/benchmarks/create/").content


def test_it_caches_staff_pages_per_publication_too(staff_client, published_run, page_queries):
    first = staff_client.get("/").content
    with page_queries() as queries:
        assert staff_client.get("/").content == first
    # The session, its remembered audience, the version and the page all come from the cache.
    assert queries == []
    from boxbench.models import Benchmark

    Benchmark.objects.filter(slug="cpu").update(title="CPU, renamed")
    materialize()
    assert b"CPU, renamed" in staff_client.get("/").content


def test_it_renders_again_a_page_cached_for_another_publication(
    client, published_run, page_queries
):
    # The cache may hold a version the database no longer has (a publisher died between its
    # commit and forgetting the version; it expires within VERSION_TTL_S): an entry is served
    # only under the version it was rendered for.
    from boxbench.models.aggregates import VERSION_KEY

    first = client.get("/").content
    current = cache.get(VERSION_KEY)
    cache.set(VERSION_KEY, current + 1000)
    with page_queries() as queries:
        assert client.get("/").content == first
    assert any("boxbench_aggregate" in sql for sql in queries)  # rendered, not served
    with page_queries() as queries:
        assert client.get("/").content == first
    assert queries == []  # and stored under the version it was rendered for


def test_it_shows_the_empty_overview_once_the_last_published_run_is_gone(client, published_run):
    from boxbench import publishing
    from boxbench.models import Run

    assert b"Score" in client.get("/").content
    Run.objects.update(published=False)
    publishing.rematerialize()
    assert b"No published results yet" in client.get("/").content


def test_it_keeps_each_audiences_page_apart(staff_client, client, published_run):
    trial = Trial.objects.filter(run=published_run).first()
    Evidence.objects.create(trial=trial, kind="readiness", data={"attempts": 3})
    staff_page = staff_client.get(RUN_URL).content.decode()
    assert "Private evidence" in staff_page and "Admin</a>" in staff_page
    staff_client.logout()
    visitor_page = client.get(RUN_URL).content.decode()
    assert "Private evidence" not in visitor_page and "Admin</a>" not in visitor_page


def test_it_never_caches_an_unpublished_runs_page(staff_client, imported_run):
    assert b"281 of 281 trials finished" in staff_client.get(RUN_URL).content
    Trial.objects.filter(run=imported_run, seq=1).delete()
    assert b"280 of 280 trials finished" in staff_client.get(RUN_URL).content


def test_it_shares_the_page_cache_between_processes():
    backend = settings.CACHES["default"]["BACKEND"]
    assert backend in (
        "django.core.cache.backends.db.DatabaseCache",
        "boxbench.redis_cache.RedisCache",
    )
    cache.set("shared-probe", 1)
    with connection.cursor() as cursor:
        if backend.endswith("db.DatabaseCache"):
            cursor.execute(f"SELECT count(*) FROM {settings.CACHE_TABLE}")
            assert cursor.fetchone()[0] == 1


def test_it_caps_a_large_units_distribution_chart_well_under_200_kb():
    # As many providers as the palette has colours, 50,000 trials each: the chart stays bounded.
    import numpy as np

    from boxbench import chart_style, charts

    rng = np.random.default_rng(7)
    rows = [
        {
            "provider_name": f"Provider {i}",
            "region_marker": "EU" if i % 2 else "",
            "distribution": summary.distribution(rng.lognormal(7, 0.5, 50_000)),
        }
        for i in range(len(chart_style.PALETTE))
    ]
    chart = charts.distribution({"rows": rows, "metric": "tool_time_ms", "measure_unit": "ms"})
    points = [t for t in chart["data"] if t["type"] == "scatter"]
    assert len(points) == len(rows)
    assert all(len(t["y"]) == summary.MAX_POINTS for t in points)
    assert len(json.dumps(chart)) < 150_000  # of the page's 200 KB budget; the table has the rest


def test_the_provider_page_names_the_regions_its_sandboxes_reported(client, imported_run):
    # "boat" stands for a provider that places its sandboxes itself, as Modal does: each trial's
    # placement records the region its sandbox reported.
    from boxbench import publishing
    from boxbench.models import Outcome
    from tests.support.web import explain_failures

    successes = Trial.objects.filter(
        run=imported_run, provider__slug="boat", outcome=Outcome.SUCCESS
    )
    ids = list(successes.order_by("seq").values_list("pk", flat=True))
    west, east = ids[: len(ids) // 4], ids[len(ids) // 4 :]
    Trial.objects.filter(pk__in=west).update(placement={"provider_region": "us-west-2"})
    Trial.objects.filter(pk__in=east).update(placement={"provider_region": "us-east-1"})
    explain_failures(imported_run)
    publishing.publish(imported_run)
    cache.clear()
    page = client.get("/providers/boat/").content.decode()
    shown = re.search(r'id="reported-regions">(.*?)</p>', page, re.S)
    assert shown is not None
    assert f"us-east-1 ({len(east)} trials), us-west-2 ({len(west)} trials)." in shown.group(1)
    # A provider whose sandboxes report no region says nothing of it.
    assert 'id="reported-regions"' not in client.get("/providers/local/").content.decode()
