"""Issue 14's dashboard in headless Chromium: a live run refreshing itself and cancelled, failing
checks resolved in bulk, read-only provenance in the admin, charts and tables at 1280 and 400 px,
and a paged 600-trial run page. Screenshots go to var/screenshots/."""

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import expect

from boxbench import holdbacks, publishing
from boxbench.models import Evidence, Run, RunStatus, Trial, TrialState
from boxbench.views.runs import EVIDENCE_PER_PAGE
from tests.support.web import SHOTS, make_running, visit
from tests.web import factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RUN_URL = f"/runs/{factory.RUN_ID}/"


def log_in(page, base, superuser=True):
    User.objects.create_user(
        "admin", password="pw-admin-123", is_staff=True, is_superuser=superuser
    )
    page.goto(base + "/admin/login/?next=/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-admin-123")
    page.locator("input[type=submit]").click()
    page.wait_for_url(base + "/")
    page.errors.clear()


def fits_width(page):
    """The page does not scroll sideways: wide tables scroll inside their own box."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_live_run_refreshes_itself_and_is_cancelled(live_server, page, imported_run):
    make_running(imported_run)
    log_in(page, live_server.url)
    visit(page, live_server.url + RUN_URL, "live-run")
    assert "Time left" in page.locator("#live-summary").inner_text()
    assert page.locator("#run-badge").get_attribute("class") == "badge badge-live"
    # Ten more trials finish: the page shows it without a reload.
    queued = Trial.objects.filter(run=imported_run, state=TrialState.QUEUED).order_by("seq")[:10]
    Trial.objects.filter(id__in=[t.id for t in queued]).update(
        state=TrialState.DONE, outcome="success"
    )
    # A locator assertion, not wait_for_function: the page's CSP (script-src 'self') forbids
    # the eval that a JavaScript predicate needs.
    expect(page.locator("#live-summary")).to_contain_text("50 queued or running", timeout=15000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "live-run-refreshed.png"), full_page=True)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#cancel-run button").click()
    # The click returns before the form's answer is drawn; the message's locator waits for it.
    expect(page.locator("#messages")).to_contain_text("cancelled")
    assert Run.objects.get(id=factory.RUN_ID).status == RunStatus.CANCELLED
    visit(page, page.url, "live-run-cancelled")
    assert page.errors == []


def test_a_completed_run_without_failures_is_not_red(live_server, page, imported_run):
    imported_run.trials.exclude(outcome="success").delete()
    log_in(page, live_server.url)
    visit(page, live_server.url + RUN_URL, "completed-run")
    colour = page.locator("#run-badge").evaluate("e => getComputedStyle(e).color")
    assert colour == "rgb(29, 107, 29)"  # green, not red


def test_failing_checks_are_resolved_in_bulk_in_the_admin(live_server, page, imported_run):
    publishing.run_audit(imported_run)
    failing = holdbacks.failing_checks(imported_run.audit_report)
    log_in(page, live_server.url)
    page.goto(live_server.url + RUN_URL)
    page.get_by_role("link", name="resolve failing checks together in the admin").click()
    page.errors.clear()
    page.fill("#id_note", "The job host was busy with other work.")
    page.select_option("#id_kind", "explained")
    page.screenshot(path=str(SHOTS / "bulk-resolve-form.png"), full_page=True)
    page.locator("#bulk-resolve input[type=submit]").click()
    page.wait_for_url(live_server.url + RUN_URL)
    message = page.locator("#messages").inner_text()
    assert f"Recorded {len(failing)} resolution(s)" in message
    visit(page, page.url, "bulk-resolved-run")
    assert page.locator("#publication-ready").is_visible()


def test_a_completed_runs_trials_are_read_only_in_the_admin(live_server, page, imported_run):
    log_in(page, live_server.url)
    trial = Trial.objects.filter(run=imported_run).first()
    page.goto(f"{live_server.url}/admin/boxbench/trial/{trial.id}/change/")
    page.screenshot(path=str(SHOTS / "admin-trial-read-only.png"), full_page=True)
    assert page.locator("input[name=_save]").count() == 0
    assert page.locator("a.deletelink").count() == 0
    page.goto(f"{live_server.url}/admin/boxbench/run/{imported_run.id}/delete/")
    page.screenshot(path=str(SHOTS / "admin-run-delete-confirm.png"), full_page=True)
    assert "Trials: 281" in page.content()


@pytest.mark.parametrize("width", [1280, 400])
def test_charts_and_tables_read_well(live_server, browser, published_run, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    tab.errors = []
    tab.on("pageerror", lambda e: tab.errors.append(str(e)))
    for shot, path in {
        "overview": "/?open=workload_time,workload_time/deepswe",
        "benchmark-deepswe": "/benchmarks/deepswe/",
        "benchmark-cpu": "/benchmarks/cpu/",
        "unit-create": "/benchmarks/create/units/create/",
        "provider-boat": "/providers/boat/",
        "run": RUN_URL,
    }.items():
        visit(tab, live_server.url + path, f"{shot}-{width}px")
        assert fits_width(tab), f"{path} scrolls sideways at {width} px"
        for chart in tab.locator("div.chart").all():
            # Every provider name on the axis is drawn whole, inside the chart.
            box = chart.bounding_box()
            for label in chart.locator(".ytick text").all():
                tick = label.bounding_box()
                assert tick["x"] >= box["x"] - 1, f"{path}: {label.text_content()} is cut"
            assert box["width"] <= width
    context.close()


def test_the_staff_page_of_a_600_trial_run_is_paged_and_short(live_server, page, tmp_path):
    path = factory.write_run(tmp_path / "big.jsonl", trials_per_cell=43)
    call_command("bench", "import", path)
    run = Run.objects.get(id=factory.RUN_ID)
    trials = list(Trial.objects.filter(run=run))
    assert len(trials) >= 600
    Evidence.objects.bulk_create(
        [
            Evidence(trial=t, kind=k, data={"attempts": 1})
            for t in trials
            for k in ("ready", "probe")
        ]
    )
    publishing.run_audit(run)
    log_in(page, live_server.url)
    visit(page, live_server.url + RUN_URL, "run-600-trials-staff")
    records = len(trials) * 2
    pager = page.locator(".pager").first.inner_text()
    assert f"of {records} records" in pager
    rows = page.locator("#evidence tbody tr")
    assert rows.count() == EVIDENCE_PER_PAGE
    # Short means its length does not grow with the run: the whole page stays well under a
    # quarter of what the evidence table alone would take unpaged.
    row_height = rows.first.bounding_box()["height"]
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < records * row_height / 4, (height, row_height)
    page.locator(".pager").first.get_by_role("link", name="next →").click()
    expect(page.locator(".pager").first).to_contain_text("Evidence page 2 of")
