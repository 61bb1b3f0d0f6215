"""The dashboard in real headless Chromium (Debian's), against a live server holding a run
imported through `bench import`. Screenshots of every page go to var/screenshots/."""

import csv
import io

import pytest
from playwright.sync_api import expect

from tests.support.web import csp_violations, visit
from tests.web import factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def unit_csv(client, path):
    return list(csv.DictReader(io.StringIO(client.get(path).content.decode())))


def test_it_draws_every_page_without_console_errors(live_server, page, published_run):
    base = live_server.url
    pages = {
        "overview": "/?open=workload_time,workload_time/deepswe",
        "benchmark-deepswe": "/benchmarks/deepswe/",
        "benchmark-deepswe-cost": "/benchmarks/deepswe/?view=cost",
        "benchmark-create": "/benchmarks/create/",
        "benchmark-cpu": "/benchmarks/cpu/",
        "unit-trace-c": "/benchmarks/deepswe/units/trace-c/",
        "unit-create": "/benchmarks/create/units/create/",
        "provider-boat": "/providers/boat/",
        "run": f"/runs/{factory.RUN_ID}/",
        "methodology": "/methodology/",
    }
    for shot, path in pages.items():
        visit(page, base + path, shot)


def test_it_draws_one_segment_per_stage_and_ranked_provider_with_unscaled_labels(
    live_server, page, published_run, client
):
    visit(page, live_server.url + "/benchmarks/deepswe/?unit=trace-a", "benchmark-deepswe-trace-a")
    stage_chart = page.locator("#stage-chart")
    assert stage_chart.locator(".barlayer .trace").count() == 3  # setup, replay, verify
    assert stage_chart.locator(".barlayer .point").count() == 3 * 3  # x three ranked providers
    shown = set(stage_chart.locator("text.bartext").all_text_contents())
    rows = unit_csv(client, "/benchmarks/deepswe/units/trace-a.csv")
    stages = ("setup", "replay", "verify")
    unscaled = {r[f"{s} median (ms)"] for r in rows if r["rank"] for s in stages}
    assert shown == unscaled
    # The workload chart: one bar per ranked provider, a status label for the refused one.
    workload = page.locator("#workload-chart")
    assert workload.locator(".barlayer .point").count() == 3
    assert "Not Supported" in workload.locator(".annotation-text").all_text_contents()[0]


def test_the_cost_view_draws_stage_costs_labelled_as_its_csv(
    live_server, page, published_run, client
):
    url = live_server.url + "/benchmarks/deepswe/?unit=trace-a&view=cost"
    visit(page, url, "benchmark-deepswe-trace-a-cost")
    cost_chart = page.locator("#cost-chart")
    assert cost_chart.locator(".barlayer .trace").count() == 3  # setup, replay, verify
    assert cost_chart.locator(".barlayer .point").count() == 3 * 3  # x three ranked providers
    shown = set(cost_chart.locator("text.bartext").all_text_contents())
    rows = unit_csv(client, "/benchmarks/deepswe/units/trace-a.csv?view=cost")
    stages = ("setup", "replay", "verify")
    assert shown == {r[f"{s} cost (USD)"] for r in rows if r["rank"] for s in stages}
    assert page.locator("#views a.current").inner_text() == "Cost"


def test_it_switches_derived_views_and_keeps_the_choice_in_the_url(
    live_server, page, published_run
):
    visit(page, live_server.url + "/benchmarks/create/", "benchmark-create-derived")
    table = page.locator("#derived .derived-table tbody tr")
    assert table.count() == 3
    both = table.first.locator("td").nth(2).inner_text()
    page.locator("#derived input[value=ready]").uncheck()
    page.wait_for_url("**stages=create**")
    expect(table.first.locator("td").nth(2)).not_to_have_text(both)
    create_only = table.first.locator("td").nth(2).inner_text()
    assert float(create_only) < float(both)
    page.reload()
    expect(page.locator("#derived input[value=ready]")).not_to_be_checked()
    assert table.first.locator("td").nth(2).inner_text() == create_only
    assert page.errors == []


def test_it_expands_the_score_tree_down_to_units(live_server, page, published_run):
    visit(page, live_server.url + "/", "overview-collapsed")
    unit_row = page.locator('tr[data-path="workload_time/deepswe/trace-a"]')
    expect(unit_row).to_be_hidden()
    # The toggles open rows in the page and keep them in the address: no request is made.
    page.locator('.toggle[data-path="workload_time"]').click()
    expect(page).to_have_url(live_server.url + "/?open=workload_time")
    page.locator('.toggle[data-path="workload_time/deepswe"]').click()
    expect(unit_row).to_be_visible()
    expect(page).to_have_url(live_server.url + "/?open=workload_time%2Cworkload_time%2Fdeepswe")
    # The address opens the same rows again (a link, a reload).
    page.reload()
    expect(unit_row).to_be_visible()
    expect(page.locator('.toggle[data-path="workload_time/deepswe"]')).to_have_attribute(
        "aria-expanded", "true"
    )
    page.locator('.toggle[data-path="workload_time"]').click()
    expect(unit_row).to_be_hidden()
    expect(page).to_have_url(live_server.url + "/")
    # A row whose section is closed stays closed, whatever the address says.
    visit(page, live_server.url + "/?open=workload_time%2Fdeepswe", "overview-closed-section")
    expect(unit_row).to_be_hidden()
    assert page.errors == []


def test_it_guides_a_newcomer_from_an_empty_overview_to_the_refused_runs_audit(
    live_server, page, imported_run
):
    from django.contrib.auth.models import User

    from boxbench import holdbacks, publishing

    publishing.run_audit(imported_run)  # refused: the fixture's Create trials drift
    User.objects.create_user("admin", password="pw-admin-123", is_staff=True, is_superuser=True)
    visit(page, live_server.url + "/", "first-visit-visitor")
    assert "No published results yet" in page.locator("#no-results").inner_text()
    page.get_by_role("link", name="Log in as an administrator").click()
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-admin-123")
    page.locator("input[type=submit]").click()
    page.wait_for_url(live_server.url + "/")
    # Django's admin pages declare no icon, so the browser's /favicon.ico request 404s there;
    # only our own pages must be free of console errors.
    page.errors.clear()
    visit(page, page.url, "first-visit-staff")
    runs = page.locator("#awaiting-runs tbody tr")
    assert runs.count() == 1 and "unresolved" in runs.first.inner_text()
    runs.first.get_by_role("link", name="dashboard-fixture").click()
    page.wait_for_url(f"{live_server.url}/runs/{imported_run.id}/")
    visit(page, page.url, "first-visit-refused-run")
    failing = page.locator("#publication-refused #failing-checks tbody tr")
    assert failing.count() == len(holdbacks.failing_checks(imported_run.audit_report))
    failing.first.get_by_role("link", name="Record a resolution in the admin").click()
    page.fill("#id_note", "The job host was busy with other work.")
    page.locator("input[name=_save]").click()
    page.wait_for_url(f"{live_server.url}/runs/{imported_run.id}/")
    page.errors.clear()
    visit(page, page.url, "first-visit-resolved-one")
    assert failing.count() == len(holdbacks.failing_checks(imported_run.audit_report)) - 1
    assert page.errors == []


def test_it_filters_the_trials_by_provider_without_inline_scripts(live_server, page, published_run):
    visit(page, live_server.url + "/benchmarks/create/units/create/", "unit-create-filter")
    page.locator("select[name=provider]").select_option("docker")
    page.wait_for_url("**provider=docker**")
    providers = page.locator("#trials-table tbody tr td:nth-child(2)").all_text_contents()
    assert providers and set(providers) == {"docker"}
    assert page.errors == [] and csp_violations(page) == []
