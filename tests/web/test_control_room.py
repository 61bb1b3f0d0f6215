"""The run page as a control room for staff: one audit row per pair with Resolve (the check
chosen from the pair's failing ones, a note required) and Publish after a preview of what
changes on the board; outsiders see none of it and can do none of it."""

import re

import pytest

from boxbench import board_changes, holdbacks, publishing
from boxbench.models import Aggregate, AuditResolution, Run, RunTransition, Scope
from tests.web.personas import login

pytestmark = pytest.mark.django_db


def run_url(run, tail=""):
    return f"/runs/{run.id}/{tail}"


def section(page: str, marker: str, end: str = "</section>") -> str:
    start = page.index(marker)
    return page[start : page.index(end, start)]


@pytest.fixture
def audited_run(imported_run):
    publishing.run_audit(imported_run)  # the fixture's three Create pairs fail the trend check
    return imported_run


def test_staff_see_one_audit_row_per_pair_with_resolve_and_publish(admin_client, audited_run):
    page = admin_client.get(run_url(audited_run)).content.decode()
    room = section(page, 'id="control-room"')
    pairs = audited_run.audit_report["pairs"]
    assert room.count('data-pair="') == len(pairs)
    for provider, benchmark, check in holdbacks.failing_checks(audited_run.audit_report):
        row = section(room, f'data-pair="{provider}/{benchmark}"', "</tr>")
        assert "<b>held back</b>" in row and f"<b>{check}</b> failing" in row
        assert f'<option value="{provider}/{benchmark}/{check}">{check}</option>' in row
        assert '<button type="submit">Resolve</button>' in row
    passing = next(p for p in pairs if p["verdict"] == "pass")
    row = section(room, f'data-pair="{passing["provider"]}/{passing["benchmark"]}"', "</tr>")
    assert "publishes with the run" in row and "Resolve" not in row
    # Successful trials against the plan's target (an imported run records no plan).
    assert re.search(r"<td>20 / <span title=\"no plan recorded\">\?</span></td>", row)
    assert f'href="/runs/{audited_run.id}/publish/">Publish…</a>' in room


def test_outsiders_get_no_control_room_and_their_posts_change_nothing(client, published_run):
    resolutions = AuditResolution.objects.count()
    for persona in ("anonymous", "member", "viewer"):
        login(client, persona)
        page = client.get(run_url(published_run)).content.decode()
        assert 'id="control-room"' not in page, persona
        answers = [
            client.post(run_url(published_run, "resolve/"), {"note": "x"}).status_code,
            client.post(run_url(published_run, "rerun/")).status_code,
            client.get(run_url(published_run, "publish/")).status_code,
            client.post(run_url(published_run, "publish/")).status_code,
        ]
        assert answers == [403] * 4, persona
    assert AuditResolution.objects.count() == resolutions
    assert RunTransition.objects.filter(run=published_run, note="republished").count() == 0


def test_a_pair_is_resolved_from_its_row_as_the_command_line_records_it(admin_client, audited_run):
    provider, benchmark, check = holdbacks.failing_checks(audited_run.audit_report)[0]
    response = admin_client.post(
        run_url(audited_run, "resolve/"),
        {"check": f"{provider}/{benchmark}/{check}", "kind": "explained", "note": "Busy host."},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == run_url(audited_run)
    assert f"Recorded: {provider} / {benchmark} / {check}" in response.content.decode()
    resolution = AuditResolution.objects.get()
    assert (resolution.provider.slug, resolution.benchmark.slug) == (provider, benchmark)
    assert (resolution.check_name, resolution.kind) == (check, "explained")
    assert (resolution.note, resolution.actor.username) == ("Busy host.", "admin")


@pytest.mark.parametrize(
    "posted, problem",
    [
        ({"kind": "explained", "note": "   "}, "Note: This field is required."),
        ({"kind": "explained", "note": "n", "check": "local/cpu/trend"}, "Failing check: Select"),
        ({"kind": "rerun", "note": "n"}, "Resolution: Select a valid choice"),
        ({"kind": "outliers_excluded", "note": "n"}, "only the outliers check is resolved"),
    ],
    ids=["blank note", "a check that did not fail", "an unknown kind", "outliers for trend"],
)
def test_a_bad_resolution_records_nothing_and_says_what_was_wrong(
    admin_client, audited_run, posted, problem
):
    provider, benchmark, check = holdbacks.failing_checks(audited_run.audit_report)[0]
    data = {"check": f"{provider}/{benchmark}/{check}", **posted}
    response = admin_client.post(run_url(audited_run, "resolve/"), data, follow=True)
    assert response.status_code == 200
    assert "Nothing recorded" in response.content.decode()
    assert problem in response.content.decode()
    assert not AuditResolution.objects.exists()


def test_publish_shows_a_preview_first_and_publishes_only_on_confirmation(
    admin_client, audited_run
):
    preview = admin_client.get(run_url(audited_run, "publish/"))
    assert preview.status_code == 200
    assert not Run.objects.get(id=audited_run.id).published
    assert Aggregate.objects.page(Scope.OVERVIEW) is None  # the rehearsal left nothing behind
    page = preview.content.decode()
    held = section(page, 'id="preview-held"', "</table>")
    for provider, benchmark, _ in holdbacks.failing_checks(audited_run.audit_report):
        assert f"<td>{provider} / {benchmark}</td>" in held
    fed = preview.context["fed"]
    assert fed and {"board", "provider", "after"} <= set(fed[0])
    moved = {(c["board"], c["provider"]): c for c in preview.context["changes"]}
    assert all(c["before"] == board_changes.ABSENT for c in moved.values())
    assert 'id="confirm-publish"' in page
    response = admin_client.post(run_url(audited_run, "publish/"), follow=True)
    assert response.redirect_chain[-1][0] == run_url(audited_run)
    assert "published; held back:" in response.content.decode()
    publication = RunTransition.objects.get(run=audited_run, note="published")
    assert publication.actor.username == "admin"


def test_the_preview_of_a_republication_shows_the_ranks_that_change(admin_client, audited_run):
    publishing.publish(audited_run)  # the Create pairs are held back: no Create board yet
    explain_failures_since(audited_run)
    preview = admin_client.get(run_url(audited_run, "publish/"))
    changes = preview.context["changes"]
    create = [c for c in changes if c["board"] == "Create"]
    assert create and all(c["before"] == board_changes.ABSENT for c in create)
    assert sorted(c["rank_after"] for c in create if c["rank_after"]) == [1, 2, 3][: len(create)]
    assert "Publish run dashboard-fixture again" in preview.content.decode()
    admin_client.post(run_url(audited_run, "publish/"))
    assert RunTransition.objects.filter(run=audited_run, note="republished").count() == 1


def explain_failures_since(run):
    for provider, benchmark, check in holdbacks.unresolved_failures(run):
        publishing.resolve_failing(run, [(provider, benchmark, check)], "explained", "by design")


def test_publishing_is_no_longer_a_bulk_action_of_the_runs_list(admin_client, audited_run):
    page = admin_client.get("/admin/boxbench/run/").content.decode()
    actions = set(re.findall(r'<option value="(\w+)"', page))
    assert "publish_runs" not in actions and "rerun_held_back" not in actions
    assert "delete_selected" in actions


def test_a_refused_publication_says_why_in_the_preview(admin_client, db):
    run = Run.objects.create(name="still-planned")
    page = admin_client.get(run_url(run, "publish/")).content.decode()
    assert 'id="publish-refused"' in page and "only a completed run is published" in page
    assert 'id="confirm-publish"' not in page


def test_board_changes_name_joins_moves_and_departures():
    def page(slug, title, rows):
        return {"benchmark": slug, "title": title, "rows": rows}

    def row(provider, rank, run, label=None):
        return {"provider": provider, "provider_name": provider.title(), "rank": rank,
                "label": label, "run": run}  # fmt: skip

    before = board_changes.standings(
        [page("create", "Create", [row("a", 1, "r1"), row("b", 2, "r1")])], None
    )
    after = board_changes.standings(
        [
            page("create", "Create", [row("a", 2, "r1"), row("b", 1, "r2")]),
            page("cpu", "CPU", [row("a", None, "r2", label="Not Ranked")]),
        ],
        {
            "providers": {"a": {"provider_name": "A"}},
            "tree": {
                "key": "overall",
                "label": "Overall",
                "scores": {"a": 90.0},
                "ranks": {"a": 1},
                "children": [],
            },
        },  # fmt: skip
    )
    found = board_changes.changes(before, after, "r2")
    rows = [(c["board"], c["provider"], c["before"], c["after"]) for c in found["changes"]]
    assert rows == [
        ("Overall", "A", board_changes.ABSENT, "#1"),
        ("CPU", "A", board_changes.ABSENT, "Not Ranked"),
        ("Create", "A", "#1", "#2"),
        ("Create", "B", "#2", "#1"),
    ]
    assert [(f["board"], f["provider"]) for f in found["fed"]] == [("CPU", "A"), ("Create", "B")]
    assert board_changes.changes(after, after, "r2")["changes"] == []
