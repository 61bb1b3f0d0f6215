"""Who can do what (docs/deployment.md "Who may do what"): every persona over every URL of the
URLconf and every admin action on runs."""

import re

import pytest
from django.test import Client

from boxbench.models import Outcome, Run, RunStatus, Trial
from tests.support.web import explain_failures
from tests.web.personas import PERSONAS, World, allowed, login, urls

pytestmark = pytest.mark.django_db

STAFF = [p for p in PERSONAS if p not in ("anonymous", "member")]
UNPUBLISHED = {
    "run unpublished",
    "run-raw-jsonl unpublished",
    "run-raw-csv unpublished",
    "run-progress unpublished",
}
# Admin pages whose answer depends on one permission: (allowed status, refused status).
ADMIN_GATES = {
    "admin:boxbench_run_start": ("start_run", 200, 403),
    "admin:boxbench_run_add": ("start_run", 302, 403),
    "admin:boxbench_auditresolution_add": ("audit_run", 200, 403),
    "admin:boxbench_evidence_changelist": ("view_private_evidence", 200, 403),
    "admin:boxbench_evidence_change": ("view_private_evidence", 200, 403),
}


def expected(key: str, persona: str) -> int | None:
    """The status this persona must get, or None where only "no 500" is asserted (admin pages
    that Django's own model permissions govern)."""
    name = key.split(" ")[0]
    if key in UNPUBLISHED:
        return 200 if allowed(persona, "view_unpublished_run") else 404
    if name == "run-cancel":
        return 405  # POST only (tests/web/test_live_runs.py posts it with each permission)
    if name == "metrics":
        if allowed(persona, "view_metrics"):
            return 200
        return 401 if persona == "anonymous" else 403
    if not name.startswith("admin:"):
        return 200
    if name == "admin:login":
        return 200 if persona in ("anonymous", "member") else 302
    if persona in ("anonymous", "member"):
        return 302  # to the login page
    if name == "admin:logout":
        return 405  # POST only
    if name in ADMIN_GATES:
        codename, yes, no = ADMIN_GATES[name]
        return yes if allowed(persona, codename) else no
    return None


# Pages and downloads that show unsuccessful trials to those who may see evidence.
EVIDENCE_SHOWN = {"unit", "run-raw-jsonl published", "run-raw-csv published"}


def private_facts(run) -> list[bytes]:
    """What only evidence viewers may read: the unsuccessful trials' ids and causes."""
    failed = Trial.objects.filter(run=run).exclude(outcome=Outcome.SUCCESS)
    facts = {str(i).encode() for i in failed.values_list("id", flat=True)}
    facts |= {c.encode() for c in failed.values_list("cause", flat=True) if c}
    assert facts, "the fixture has unsuccessful trials"
    return sorted(facts)


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_every_persona_gets_what_it_may_on_every_url(client, published_run, capsys):
    world = World(published_run)
    addresses = urls(world)
    private = private_facts(published_run)
    tried, errors, wrong, leaks = 0, [], [], []
    for persona in PERSONAS:
        login(client, persona)
        for key, url in addresses:
            response = client.get(url)
            tried += 1
            if response.status_code >= 500:
                errors.append((persona, key, url, response.status_code))
            want = expected(key, persona)
            if want is not None and response.status_code != want:
                wrong.append((persona, key, url, response.status_code, want))
            if persona in ("anonymous", "member") and key.startswith("admin:") and want == 302:
                # To the login page (the logout page sends a visitor to the admin's index,
                # which then asks for a login).
                assert re.search(r"^/admin/(login/|$)", response["Location"]), (persona, key)
            if key == "run published":
                shown = b"Private evidence" in response.content
                assert shown == allowed(persona, "view_private_evidence"), persona
            if key == "benchmark idle":
                shown = b'id="awaiting"' in response.content
                assert shown == allowed(persona, "view_unpublished_run"), persona
            if key.startswith("admin:") or response.status_code != 200:
                continue  # the admin's pages follow Django's model permissions
            found = [fact for fact in private if fact in body(response)]
            if not allowed(persona, "view_private_evidence"):
                if found:
                    leaks.append((persona, key, url, found))
            elif key in EVIDENCE_SHOWN:
                assert found, (persona, key)
    with capsys.disabled():
        print(
            f"\npersona matrix: {len(addresses)} URLs x {len(PERSONAS)} personas = {tried} "
            f"requests, {len(errors)} answers 500, {len(wrong)} unexpected, {len(leaks)} leaks"
        )
    assert errors == []
    assert leaks == [], "\n".join(map(str, leaks))
    assert wrong == [], "\n".join(map(str, wrong))


def offered_actions(client) -> set[str]:
    page = client.get("/admin/boxbench/run/").content.decode()
    return set(re.findall(r'<option value="(\w+)"', page)) - {""}


def act(client, action: str, run: Run):
    return client.post(
        "/admin/boxbench/run/", {"action": action, "_selected_action": [str(run.id)]}
    )


@pytest.mark.parametrize("persona", PERSONAS)
def test_each_admin_action_needs_its_own_permission(imported_run, persona):
    explain_failures(imported_run)  # audited, every failing check resolved: publishable
    Run.objects.filter(id=imported_run.id).update(audited_at=None)
    planned = Run.objects.create(name="to-cancel", status=RunStatus.PLANNED)
    client = Client()
    login(client, persona)
    if persona in STAFF:
        want = {
            action
            for action, codename in [
                ("cancel_runs", "cancel_run"),
                ("audit_runs", "audit_run"),
                ("publish_runs", "publish_run"),
            ]
            if allowed(persona, codename)
        }
        assert offered_actions(client) - {"delete_selected"} == want

    act(client, "cancel_runs", planned)
    planned.refresh_from_db()
    assert (planned.status == RunStatus.CANCELLED) == allowed(persona, "cancel_run")

    act(client, "audit_runs", imported_run)
    imported_run.refresh_from_db()
    assert (imported_run.audited_at is not None) == allowed(persona, "audit_run")

    act(client, "publish_runs", imported_run)
    imported_run.refresh_from_db()
    assert imported_run.published == allowed(persona, "publish_run")
