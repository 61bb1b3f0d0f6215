"""The admin's runs: the list shows each run's progress, audit result and held-back pairs, and a
run's page shows its manifest and audit as tables, not JSON dumps."""

import pytest

from boxbench import admin_tables, holdbacks, publishing
from boxbench.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def audited_run(imported_run):
    publishing.run_audit(imported_run)  # the fixture's three Create pairs fail the trend check
    return imported_run


def test_the_runs_list_shows_progress_audit_and_held_back_pairs(admin_client, audited_run):
    page = admin_client.get("/admin/boxbench/run/").content.decode()
    for column in ("Progress", "Audit", "Held back", "Run page"):
        assert f">{column}</a>" in page or f"<span>{column}</span>" in page, column
    progress = admin_tables.progress_text(audited_run)
    assert progress.startswith("280 successful, ") and progress in page
    failing = holdbacks.failing_checks(audited_run.audit_report)
    pairs = len(audited_run.audit_report["pairs"])
    assert f"{len(failing)} failing checks on 3 of {pairs} pairs (3 unresolved)" in page
    assert "boat / create, docker / create, local / create" in page
    assert f'<a href="/runs/{audited_run.id}/">view</a>' in page


def test_a_run_without_an_audit_says_so_in_the_list(admin_client, imported_run):
    page = admin_client.get("/admin/boxbench/run/").content.decode()
    assert "not audited" in page


def test_the_run_view_shows_manifest_and_audit_as_tables(admin_client, audited_run):
    page = admin_client.get(f"/admin/boxbench/run/{audited_run.id}/change/").content.decode()
    for title in ("Plan", "Benchmarks as planned", "Providers and job hosts", "Pairs"):
        assert f"<h4>{title}</h4>" in page, title
    assert "<h4>Checks of local / create</h4>" in page
    assert "trials per unit" in page and "failing checks" in page
    # Not one JSON dump: no quoted keys, no editable manifest.
    assert "&quot;seed&quot;" not in page and "&quot;pairs&quot;" not in page
    assert 'name="manifest"' not in page
    assert 'href="/admin/r/' in page  # "View on site": the run's page


def test_a_published_runs_transitions_read_as_words(admin_client, audited_run):
    publishing.publish(audited_run)
    page = admin_client.get(f"/admin/boxbench/run/{audited_run.id}/change/").content.decode()
    assert "RunTransition object" not in page
    assert "completed → completed: published" in page


def test_recorded_text_is_escaped_in_the_tables(db):
    run = Run(name="x", manifest={"seed": 1, "note": "<script>alert(1)</script>"})
    html = admin_tables.manifest_tables(run)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<code>" in admin_tables.table({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})
    long = admin_tables.table(list(range(admin_tables.FOLD_AFTER + 1)))
    assert long.startswith("<details><summary>13 entries</summary>")


def test_the_resolution_form_offers_the_runs_failing_checks_not_a_text_box(
    admin_client, audited_run
):
    page = admin_client.get(f"/admin/boxbench/auditresolution/add/?run={audited_run.id}")
    field = page.context["adminform"].form.fields["check_name"]
    failing = {c for _, _, c in holdbacks.failing_checks(audited_run.audit_report)}
    assert [value for value, _ in field.choices] == sorted(failing)
    assert '<select name="check_name"' in page.content.decode()
    unnamed = admin_client.get("/admin/boxbench/auditresolution/add/").context["adminform"]
    assert "cache_flags" in dict(unnamed.form.fields["check_name"].choices)
    assert admin_client.get("/admin/boxbench/auditresolution/add/?run=zz").status_code == 200


def test_the_resolution_form_names_no_check_of_a_run_the_staff_member_may_not_see(
    client, audited_run
):
    from tests.web.personas import login

    login(client, "audit_run", also=("view_auditresolution",))
    page = client.get(f"/admin/boxbench/auditresolution/add/?run={audited_run.id}")
    choices = dict(page.context["adminform"].form.fields["check_name"].choices)
    assert "cache_flags" in choices  # every check: the unpublished run stays unseen
