"""Re-running what the audit holds back (boxbench/reruns.py): each held-back pair of a run is
re-run once, through the queue, within a printed budget; a re-run whose pair passes is published
and replaces only that pair, and a pair that fails twice stays held back with both audits linked.

A real trend failure needs 15+ drifting trials, so which audits fail is chosen here: every audit
is numbered as it is made, and the chosen ones report the trend check failing on local / destroy.
"""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench import holdbacks, publishing, reruns
from boxbench.models import AuditResolution, ResolutionKind, Run

pytestmark = pytest.mark.django_db(transaction=True)

PAIR = ("local", "destroy")


@pytest.fixture
def sync_queue(monkeypatch):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)  # read once at import; the settings fixture is too late


@pytest.fixture
def failing_audits(monkeypatch):
    """The set of audit numbers (1 for the first audit made, 2 for the next...) that fail."""
    from stats import audit as stats_audit

    failing: set[int] = set()
    made = {"n": 0}
    real_audit = stats_audit.audit

    def numbered(*args, **kwargs):
        report = real_audit(*args, **kwargs)
        made["n"] += 1
        report["test_audit_number"] = made["n"]
        return report

    real_failing = holdbacks.failing_checks

    def failing_checks(report):
        found = real_failing(report)
        if report.get("test_audit_number") in failing:
            found.append((*PAIR, "trend"))
        return found

    monkeypatch.setattr(stats_audit, "audit", numbered)
    monkeypatch.setattr(holdbacks, "failing_checks", failing_checks)
    monkeypatch.setattr(publishing, "failing_checks", failing_checks)
    return failing


def run_default(out, *extra):
    call_command(
        "bench",
        "run",
        "--benchmark",
        "destroy",
        "--trials",
        "2",
        "--provider",
        "local",
        "--publish",
        *extra,
        stdout=out,
    )
    return Run.objects.filter(manifest__rerun_of__isnull=True).get()


def board_run_for(provider: str, benchmark: str) -> str:
    from boxbench.leaderboard.sources import leaderboard_sources
    from boxbench.models import Benchmark, Provider

    published = list(Run.objects.published())
    sources = leaderboard_sources(published, holdbacks.held_back(published))
    bench = Benchmark.objects.get(slug=benchmark)
    return str(sources[bench.id][Provider.objects.get(slug=provider).id].id)


def test_a_held_back_pair_is_re_run_once_and_its_passing_re_run_published(
    chain_provider, sync_queue, failing_audits
):
    failing_audits.add(1)  # the original run's audit; the re-run's passes
    out = io.StringIO()
    original = run_default(out, "--rerun-held-back")
    text = out.getvalue()
    assert "held back local / destroy: trend failed the audit and is not resolved" in text
    assert "Re-run budget: at most 4 pair(s) per run, each once (BOXBENCH_RERUN_MAX_PAIRS)" in text
    assert "1 held back, re-running 1 (2 trials)" in text
    [rerun] = reruns.reruns_of(original)
    assert rerun.published and rerun.status == "completed"
    assert rerun.typed_manifest.rerun_of.benchmark == "destroy"
    assert list(rerun.typed_manifest.benchmarks) == ["destroy"]
    assert list(rerun.typed_manifest.providers) == ["local"]
    assert f"local / destroy: the re-run {rerun.id} passed the audit and is published" in text
    resolution = AuditResolution.objects.get(run=original)
    assert (resolution.kind, resolution.rerun_id) == (ResolutionKind.RERUN, rerun.id)
    # The board takes the pair from the re-run; the original's numbers of it stay out.
    assert board_run_for(*PAIR) == str(rerun.id)
    [held] = holdbacks.held_back([original])[original.id]
    assert f"resolved by re-running the pair (run {rerun.id})" in held["checks"][0]["why"]
    # Once only: nothing is left to re-run.
    out = io.StringIO()
    call_command("bench", "rerun", str(original.id), "--held-back", stdout=out)
    assert "0 held back, re-running 0 (0 trials)" in out.getvalue()
    assert reruns.reruns_of(original) == [rerun]


def test_a_re_run_the_other_caller_published_is_reported_once_as_published(
    chain_provider, sync_queue, failing_audits, caplog
):
    """The audit task and `bench rerun` both finish a re-run; the one that finds it published
    meanwhile says what the other said, and nothing contradicting it."""
    failing_audits.add(1)
    original = run_default(io.StringIO(), "--rerun-held-back")
    [rerun] = reruns.reruns_of(original)
    assert rerun.published
    rerun.published = False  # as the slower caller read it, before the other published
    with caplog.at_level("DEBUG"):
        outcome = reruns.finish(rerun)
    assert outcome == f"local / destroy: the re-run {rerun.id} passed the audit and is published"
    assert not [r for r in caplog.records if "not published" in r.getMessage()]


def test_a_pair_failing_twice_stays_held_back_with_both_audits(
    chain_provider, sync_queue, failing_audits, client
):
    failing_audits.update({1, 2})
    out = io.StringIO()
    original = run_default(out)
    assert reruns.reruns_of(original) == []  # without --rerun-held-back, nothing is re-run
    call_command("bench", "rerun", original.name, "--held-back", stdout=out)
    [rerun] = reruns.reruns_of(original)
    assert not rerun.published and rerun.audit_report is not None
    assert "failed the audit too (trend); the pair stays held back" in out.getvalue()
    assert not AuditResolution.objects.filter(run=original).exists()
    [held] = holdbacks.held_back([original])[original.id]
    assert (held["provider"], held["benchmark"]) == PAIR
    # A pair is re-run once: a second call has nothing to do.
    out = io.StringIO()
    call_command("bench", "rerun", str(original.id), "--held-back", stdout=out)
    assert "0 held back, re-running 0" in out.getvalue()


def test_the_budget_bounds_the_pairs_re_run(chain_provider, sync_queue, failing_audits):
    failing_audits.add(1)
    original = run_default(io.StringIO())
    out = io.StringIO()
    call_command("bench", "rerun", str(original.id), "--held-back", "--max-pairs", "0", stdout=out)
    assert "1 held back, re-running 0 (0 trials); 1 left held back" in out.getvalue()
    assert reruns.reruns_of(original) == []
    with pytest.raises(CommandError, match="--max-pairs must be 0 or more"):
        call_command("bench", "rerun", str(original.id), "--held-back", "--max-pairs", "-1")


def test_the_run_pages_link_the_original_and_its_re_runs(
    chain_provider, sync_queue, failing_audits, admin_client
):
    failing_audits.update({1, 2})
    original = run_default(io.StringIO(), "--rerun-held-back")
    [rerun] = reruns.reruns_of(original)
    page = admin_client.get(f"/runs/{original.id}/").content.decode()
    assert 'id="rerun-pairs"' in page and f'href="/runs/{rerun.id}/"' in page
    assert "failed its audit too (trend): the pair stays held back" in page
    page = admin_client.get(f"/runs/{rerun.id}/").content.decode()
    assert f'href="/runs/{original.id}/"' in page
    # The pair as the boards name it (the declaration's provider name, the benchmark's title).
    assert "A re-run of the pair Local sandbox (bubblewrap) / Destroy" in page


def test_the_run_pages_re_run_button_re_runs_a_held_back_pair_through_the_queue(
    chain_provider, sync_queue, failing_audits, admin_client
):
    failing_audits.add(1)
    original = run_default(io.StringIO())
    page = admin_client.get(f"/runs/{original.id}/").content.decode()
    assert '<input type="hidden" name="pair" value="local/destroy">' in page
    response = admin_client.post(
        f"/runs/{original.id}/rerun/", {"pair": "local/destroy"}, follow=True
    )
    assert "1 held back, re-running 1 (2 trials)" in response.content.decode()
    # The queue (inline here) ran the re-run; its audit task published it and resolved the pair.
    [rerun] = reruns.reruns_of(original)
    assert rerun.published
    assert AuditResolution.objects.get(run=original).rerun_id == rerun.id
    assert board_run_for(*PAIR) == str(rerun.id)
    # Once, ever: the same button again re-runs nothing.
    again = admin_client.post(f"/runs/{original.id}/rerun/", {"pair": "local/destroy"}, follow=True)
    assert "Nothing re-run" in again.content.decode()
    assert len(reruns.reruns_of(original)) == 1
