"""The staff run page as a control room in headless Chromium: a failing pair resolved from its
row, then the run published through the preview. Screenshots go to var/screenshots/."""

import pytest
from django.contrib.auth.models import User

from boxbench import holdbacks, publishing
from boxbench.models import AuditResolution, Run
from tests.support.web import visit
from tests.web import factory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RUN_URL = f"/runs/{factory.RUN_ID}/"


def test_a_reviewer_resolves_a_pair_and_publishes_after_the_preview(
    live_server, page, imported_run
):
    publishing.run_audit(imported_run)
    failing = holdbacks.failing_checks(imported_run.audit_report)
    User.objects.create_superuser("admin", password="pw-admin-123")
    page.goto(live_server.url + "/admin/login/?next=" + RUN_URL)
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-admin-123")
    page.locator("input[type=submit]").click()
    page.wait_for_url(live_server.url + RUN_URL)
    page.errors.clear()
    visit(page, page.url, "control-room")
    rows = page.locator("#audit-summary tbody tr")
    assert rows.count() == len(imported_run.audit_report["pairs"])
    provider, benchmark, check = failing[0]
    row = page.locator(f'#audit-summary tr[data-pair="{provider}/{benchmark}"]')
    assert "held back" in row.inner_text()
    # The check is chosen, not typed; the note is required before anything is sent.
    assert row.locator("select[name=check] option").all_inner_texts() == [check]
    row.get_by_role("button", name="Resolve").click()
    assert not AuditResolution.objects.exists()
    row.locator("input[name=note]").fill("The job host was busy with other work.")
    row.get_by_role("button", name="Resolve").click()
    page.wait_for_url(live_server.url + RUN_URL)
    assert f"Recorded: {provider} / {benchmark} / {check}" in page.locator("#messages").inner_text()
    assert page.locator(f'#audit-summary tr[data-pair="{provider}/{benchmark}"] form').count() == 0
    page.get_by_role("link", name="Publish…").click()
    page.wait_for_url(f"{live_server.url}{RUN_URL}publish/")
    visit(page, page.url, "publish-preview")
    held = page.locator("#preview-held tbody tr")
    assert held.count() == len(failing) - 1
    assert page.locator("#preview-fed tbody tr").count() > 0
    assert not Run.objects.get(id=imported_run.id).published
    page.get_by_role("button", name="Publish run dashboard-fixture").click()
    page.wait_for_url(live_server.url + RUN_URL)
    assert "published; held back:" in page.locator("#messages").inner_text()
    assert Run.objects.get(id=imported_run.id).published
    assert page.errors == []
