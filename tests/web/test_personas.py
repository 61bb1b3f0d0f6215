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
    "api-manifest unpublished",
    "api-audit unpublished",
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
    if name in ("run-cancel", "run-resolve", "run-rerun"):
        return 405  # POST only (test_live_runs.py and test_control_room.py post them)
    if name == "run-publish":
        # Its preview: the run first (404 where unseen), then the permission.
        if key.endswith("unpublished") and not allowed(persona, "view_unpublished_run"):
            return 404
        return 200 if allowed(persona, "publish_run") else 403
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
    if action == "publish":  # the run page's Publish button, no longer a bulk action
        return client.post(f"/runs/{run.id}/publish/")
    return client.post(
        "/admin/boxbench/run/", {"action": action, "_selected_action": [str(run.id)]}
    )


@pytest.mark.parametrize("persona", PERSONAS)
def test_each_admin_action_needs_its_own_permission(imported_run, persona):
    explain_failures(imported_run)  # audited, every failing check resolved: publishable
    Run.objects.filter(id=imported_run.id).update(audited_at=None)
    planned = Run.objects.create(name="to-cancel", status=RunStatus.PLANNED)
    client = Client()
    # The runs acted on are unpublished: the admin lists them only with view_unpublished_run.
    login(client, persona, also=("view_unpublished_run",))
    if persona in STAFF:
        want = {
            action
            for action, codename in [("cancel_runs", "cancel_run"), ("audit_runs", "audit_run")]
            if allowed(persona, codename)
        }
        assert offered_actions(client) - {"delete_selected"} == want

    act(client, "cancel_runs", planned)
    planned.refresh_from_db()
    assert (planned.status == RunStatus.CANCELLED) == allowed(persona, "cancel_run")

    act(client, "audit_runs", imported_run)
    imported_run.refresh_from_db()
    assert (imported_run.audited_at is not None) == allowed(persona, "audit_run")

    act(client, "publish", imported_run)
    imported_run.refresh_from_db()
    assert imported_run.published == allowed(persona, "publish_run")


def hidden_trial(run: Run) -> Trial:
    """A successful trial of an unpublished run, made from one of the fixture's."""
    model = Trial.objects.filter(run__published=True, outcome=Outcome.SUCCESS).first()
    return Trial.objects.create(
        run=run,
        benchmark=model.benchmark,
        unit=model.unit,
        provider=model.provider,
        round=1,
        seq=1,
        state="done",
        outcome=Outcome.SUCCESS,
        metrics=model.metrics,
    )


@pytest.mark.parametrize("persona", STAFF)
def test_the_admin_shows_unpublished_runs_only_with_their_permission(published_run, persona):
    world = World(published_run)
    trial = hidden_trial(world.unpublished)
    client = Client()
    login(client, persona)
    may = allowed(persona, "view_unpublished_run")
    pending = str(world.unpublished.id).encode()
    pages = {
        "run list": "/admin/boxbench/run/",
        "run list, filtered": "/admin/boxbench/run/?published__exact=0",
        "run list, facets": "/admin/boxbench/run/?_facets=1",
        "raw-id lookup of runs": "/admin/boxbench/run/?_to_field=id&_popup=1",
        "trial list": "/admin/boxbench/trial/",
        "trial list, by run": f"/admin/boxbench/trial/?run__id__exact={world.unpublished.id}",
        "raw-id lookup of trials": "/admin/boxbench/trial/?_to_field=id&_popup=1",
        "resolution form": "/admin/boxbench/auditresolution/add/",
    }
    for what, url in pages.items():
        response = client.get(url)
        if response.status_code == 403:
            continue  # the model's own permission refuses the page as a whole
        assert response.status_code == 200, (what, response.status_code)
        # A page whose own address names the run echoes it in its links: look for its trial.
        names = [str(trial.id).encode()] + ([] if pending.decode() in url else [pending])
        shown = any(name in response.content for name in names)
        assert shown == may, what
    for url in (
        f"/admin/boxbench/run/{world.unpublished.id}/change/",
        f"/admin/boxbench/trial/{trial.id}/change/",
    ):
        response = client.get(url)
        assert (response.status_code == 200) == may, url
        assert pending not in response.content or may, url


@pytest.mark.parametrize("persona", STAFF)
def test_the_admin_shows_private_trial_fields_only_with_their_permission(published_run, persona):
    failed = Trial.objects.filter(run=published_run).exclude(outcome=Outcome.SUCCESS).first()
    replacement = Trial.objects.filter(run=published_run, outcome=Outcome.SUCCESS).first()
    Trial.objects.filter(id=replacement.id).update(replaces=failed, cost_usd=0.123456789)
    client = Client()
    login(client, persona)
    may = allowed(persona, "view_private_evidence")
    page = client.get(f"/admin/boxbench/trial/{replacement.id}/change/")
    assert page.status_code == 200
    for private in (str(failed.id).encode(), b"0.123456789", b"Owner", b"Replaces"):
        assert (private in page.content) == may, private
    listing = client.get("/admin/boxbench/trial/").content
    assert (b"column-owner" in listing) == may
    assert (b"By owner" in listing) == may


@pytest.mark.parametrize(
    "model", ["provider", "benchmark", "unit", "aggregate"], ids=lambda m: f"{m} read-only"
)
def test_definitions_and_aggregates_are_read_only_in_the_admin(published_run, model):
    client = Client()
    login(client, "superuser")
    from django.apps import apps

    row = apps.get_model("boxbench", model).objects.first()
    before = {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}
    page = client.get(f"/admin/boxbench/{model}/{row.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert client.post(f"/admin/boxbench/{model}/{row.pk}/change/", {}).status_code == 403
    assert client.get(f"/admin/boxbench/{model}/add/").status_code == 403
    assert (
        client.post(f"/admin/boxbench/{model}/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    )
    row.refresh_from_db()
    assert {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields} == before


@pytest.mark.parametrize("persona", PERSONAS)
def test_healthz_tells_the_database_only_to_operations_readers(client, persona, db):
    login(client, persona)
    answer = client.get("/healthz").json()
    if allowed(persona, "view_metrics"):
        assert answer["database"]["ok"] is True
    else:
        assert answer == {"status": "ok"}


def test_after_publication_only_someone_who_may_publish_changes_the_board(imported_run):
    from boxbench import publishing
    from boxbench.models import Aggregate, Benchmark, Provider, Scope

    publishing.publish(imported_run)  # its three Create pairs failed the audit: held back
    report = Run.objects.get(id=imported_run.id).audit_report
    board = Aggregate.objects.page(Scope.OVERVIEW)
    auditor, publisher = Client(), Client()
    login(auditor, "audit_run", also=("view_run", "view_auditresolution"))
    login(publisher, "publish_run")
    act(auditor, "audit_runs", imported_run)
    assert Run.objects.get(id=imported_run.id).audit_report == report
    resolution = {
        "run": str(imported_run.id),
        "provider": Provider.objects.get(slug="local").id,
        "benchmark": Benchmark.objects.get(slug="create").id,
        "check_name": "trend",
        "kind": "explained",
        "note": "Create slows down over the run by design.",
    }
    assert auditor.post("/admin/boxbench/auditresolution/add/", resolution).status_code == 302
    assert Aggregate.objects.page(Scope.OVERVIEW) == board
    act(publisher, "publish", imported_run)
    assert Aggregate.objects.page(Scope.OVERVIEW) != board
    held = Aggregate.objects.page(Scope.RUN, imported_run.id)["held_back"]
    assert {p["provider"] for p in held} == {"docker", "boat"}
