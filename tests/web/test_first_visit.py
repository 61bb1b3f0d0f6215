"""A newcomer's first visit: nothing published yet (the first run's audit refused it). Visitors
are told so plainly; staff see the runs awaiting publication and, on a refused run's page, what
failed and how to resolve it."""

from urllib.parse import parse_qs, urlsplit

import pytest

from boxbench import holdbacks, publishing
from boxbench.models import Benchmark, Provider, Run
from boxbench.views.awaiting import audit_verdict
from runner.manifest import Manifest
from tests.support.web import explain_failures
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"
NO_RESULTS = "No published results yet; an administrator publishes runs after their audit"


def test_it_tells_a_visitor_nothing_is_published_and_where_to_log_in(client, imported_run):
    page = client.get("/").content.decode()
    assert NO_RESULTS in page
    assert 'href="/admin/login/?next=/"' in page
    assert "dashboard-fixture" not in page and RUN_URL not in page


def test_it_tells_a_logged_in_outsider_the_same(outsider_client, imported_run):
    page = outsider_client.get("/benchmarks/create/").content.decode()
    assert NO_RESULTS in page
    assert "dashboard-fixture" not in page


def test_it_lists_the_runs_awaiting_publication_to_staff(staff_client, imported_run):
    Run.objects.create(name="queued-later", manifest=_manifest())
    page = staff_client.get("/").content.decode()
    assert "Runs awaiting publication" in page and NO_RESULTS not in page
    # Newest first, each linked to its report.
    assert page.index("queued-later") < page.index("dashboard-fixture")
    assert f'<a href="{RUN_URL}">dashboard-fixture</a>' in page
    # The imported run: every success counted, no plan to give a target, not audited yet.
    assert "<td>280 / —</td>" in page and "<td>0 / 80</td>" in page
    assert "not audited" in page
    assert "bench publish RUN" in page


def test_it_shows_staff_how_many_failing_checks_are_still_unresolved(staff_client, imported_run):
    publishing.run_audit(imported_run)
    failing = holdbacks.failing_checks(imported_run.audit_report)
    assert failing  # the fixture's Create trials drift by design
    page = staff_client.get("/").content.decode()
    assert f"{len(failing)} failing checks, <b>{len(failing)} unresolved</b>" in page
    explain_failures(imported_run)
    assert f"{len(failing)} failing checks, all resolved" in staff_client.get("/").content.decode()


def test_it_lists_awaiting_runs_in_a_few_queries(staff_client, imported_run, page_queries):
    publishing.run_audit(imported_run)
    # Session and user, the user's and their groups' permissions, the publication version, the
    # overview aggregate, the runs with their counts, their resolutions.
    with page_queries() as queries:
        assert staff_client.get("/").status_code == 200
    assert len(queries) <= 8, queries


def test_it_shows_a_benchmark_without_results_with_the_runs_that_hold_it(
    staff_client, imported_run
):
    Run.objects.create(name="holds-nothing")
    page = staff_client.get("/benchmarks/create/").content.decode()
    assert "No published results for this benchmark yet" in page and "Create" in page
    assert "dashboard-fixture" in page and "holds-nothing" not in page
    assert staff_client.get("/benchmarks/nothing-like-it/").status_code == 404


def test_it_puts_the_failing_checks_and_their_resolutions_at_the_top_of_a_refused_run(
    staff_client, imported_run
):
    publishing.run_audit(imported_run)
    page = staff_client.get(RUN_URL).content.decode()
    refused = page[page.index('id="publication-refused"') : page.index("Raw data:")]
    failing = holdbacks.failing_checks(imported_run.audit_report)
    assert f"{len(failing)} failing audit checks unresolved" in refused
    for provider, benchmark, check in failing:
        assert f"<td>{provider} / {benchmark}</td><td>{check}</td>" in refused
        assert f"--resolve {provider}/{benchmark}/{check} --kind explained" in refused
    for way in ("Exclude the outliers", "Explain the effect", "Re-run the pair"):
        assert way in refused
    assert f"bench publish {imported_run.id}" in refused
    held = page[page.index('id="held-back"') : page.index('id="publication-refused"')]
    names = {"boat": "Boat", "docker": "Docker", "local": "Local sandbox", "create": "Create"}
    for provider, benchmark, _ in failing:  # named as the boards name them
        assert f"<td>{names[provider]} / {names[benchmark]}</td>" in held
    assert "failed the audit and is not resolved" in held


def test_it_links_each_failing_check_to_a_filled_in_admin_form(admin_client, imported_run):
    publishing.run_audit(imported_run)
    response = admin_client.get(RUN_URL)
    blocker = response.context["blockers"][0]
    link = urlsplit(blocker["admin_url"])
    assert link.path == "/admin/boxbench/auditresolution/add/"
    query = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert query == {
        "run": str(imported_run.id),
        "provider": str(Provider.objects.get(slug=blocker["provider"]).id),
        "benchmark": str(Benchmark.objects.get(slug=blocker["benchmark"]).id),
        "check_name": blocker["check"]["name"],
        "kind": "explained",
    }
    form = admin_client.get(blocker["admin_url"]).context["adminform"].form
    assert form.initial["check_name"] == blocker["check"]["name"]


def test_it_returns_to_the_run_after_a_resolution_is_recorded_in_the_admin(
    admin_client, imported_run
):
    publishing.run_audit(imported_run)
    provider, benchmark, check = holdbacks.failing_checks(imported_run.audit_report)[0]
    response = admin_client.post(
        "/admin/boxbench/auditresolution/add/",
        {
            "run": str(imported_run.id),
            "provider": Provider.objects.get(slug=provider).id,
            "benchmark": Benchmark.objects.get(slug=benchmark).id,
            "check_name": check,
            "kind": "explained",
            "note": "A busy job host.",
        },
    )
    assert response.status_code == 302 and response["Location"] == RUN_URL


def test_it_says_a_run_is_ready_once_every_failure_is_resolved(staff_client, imported_run):
    explain_failures(imported_run)
    page = staff_client.get(RUN_URL).content.decode()
    assert "Ready to publish" in page and "publication-refused" not in page
    assert 'id="held-back"' not in page
    publishing.publish(imported_run)
    page = staff_client.get(RUN_URL).content.decode()
    assert "Ready to publish" not in page and "publication-refused" not in page


def test_it_still_hides_a_refused_run_from_visitors(client, imported_run):
    publishing.run_audit(imported_run)
    assert client.get(RUN_URL).status_code == 404


def _manifest() -> dict:
    """A plan as runner.plan records it: two providers, one of them refused Disk."""
    return {
        "benchmarks": {
            "create": {"trials_per_unit": 20, "units": ["create"]},
            "deepswe": {"trials_per_unit": 5, "units": ["a", "b", "c"]},
            "disk": {"trials_per_unit": 10, "units": ["disk"]},
        },
        "chains": {
            "local": {"order": [["create", 1], ["deepswe", 1], ["create", 2], ["disk", 1]]},
            "docker": {"order": [["deepswe", 1], ["create", 1]]},
        },
    }


def test_it_takes_the_target_from_each_chains_planned_benchmarks():
    assert Manifest.from_json(_manifest()).planned_successes() == (20 + 15 + 10) + (15 + 20)
    assert Manifest.from_json({"seed": 7}).planned_successes() is None  # an imported run


def test_it_counts_only_failing_checks_without_a_resolution():
    report = {
        "pairs": [
            {
                "provider": "local",
                "benchmark": "create",
                "checks": {"trend": {"verdict": "fail"}, "lag1": {"verdict": "note"}},
            },
            {
                "provider": "docker",
                "benchmark": "create",
                "checks": {"trend": {"verdict": "fail"}, "outliers": {"verdict": "fail"}},
            },
        ]
    }
    resolved = {("docker", "create", "trend")}
    assert audit_verdict(report, resolved) == {"audited": True, "failing": 3, "unresolved": 2}
    assert audit_verdict(None, set()) == {"audited": False, "failing": 0, "unresolved": 0}
