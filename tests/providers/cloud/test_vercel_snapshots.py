"""Vercel's snapshots, through its SDK against the loopback fake: the copy holds the files written
before it and not those written after, the source answers again after the snapshot stopped its
session, every snapshot is deleted and confirmed gone, and a demo run leaves nothing."""

import dataclasses
import io

import pytest
from django.core.management import call_command

from runner.outcomes import EvidenceKind
from runner.providers import demo, get_provider
from runner.providers.base import ProviderError
from tests.providers.cloud.copies import SPEC, demo_run, files, ready, write
from tests.providers.cloud.helpers import run, running_fake, unspaced_creates


@pytest.fixture
def vercel(tmp_path):
    with running_fake("vercel", tmp_path / "fake") as found:
        yield found


def test_a_restored_snapshot_holds_the_files_from_before_it_and_is_deleted(vercel):
    provider, fake = vercel.provider, vercel.fake
    source = ready(provider, SPEC)
    write(provider, source, "before")
    stopped = source.facts["session"]
    snapshot_id = provider.snapshot(source)
    # Vercel stops the session it snapshots; the source's next command resumes it first.
    assert fake.status(fake.sessions[stopped]) == "stopped"
    write(provider, source, "after")
    assert files(provider, source) == b"after\nbefore\n"
    restored = provider.restore(snapshot_id, SPEC)
    assert files(provider, restored) == b"before\n"
    assert restored.facts["restored_from"] == snapshot_id
    # Found through its sandbox's batch tag, as `bench cleanup` looks for it.
    [listed] = provider.list_snapshots(SPEC.label)
    assert listed.id == snapshot_id and listed.created_at is not None
    assert provider.list_snapshots("bb-another") == []
    assert not provider.snapshot_gone(snapshot_id)
    provider.delete_snapshot(snapshot_id)
    assert provider.snapshot_gone(snapshot_id) and fake.snapshots == {}
    provider.delete_snapshot(snapshot_id)  # already gone: what a delete wants
    with pytest.raises(ProviderError) as refused:
        provider.restore(snapshot_id, SPEC)
    assert (refused.value.operation, refused.value.code) == ("restore", "not_found")
    for sandbox in (restored, source):
        provider.destroy(sandbox)


def test_destroying_the_source_takes_its_snapshots_with_it(vercel):
    provider, fake = vercel.provider, vercel.fake
    source = ready(provider, SPEC)
    first = provider.snapshot(source)
    second = provider.snapshot(source)  # on the session the first one's resume started
    assert first != second and len(fake.snapshots) == 2
    provider.destroy(source)
    assert provider.snapshot_gone(first) and provider.snapshot_gone(second)


def test_a_snapshot_of_a_sandbox_that_is_gone_is_a_named_provider_failure(vercel):
    provider = vercel.provider
    source = ready(provider, SPEC)
    provider.destroy(source)
    gone = dataclasses.replace(source, handle=None)
    with pytest.raises(ProviderError) as missing:
        provider.snapshot(gone)
    assert (missing.value.operation, missing.value.code) == ("snapshot", "not_found")


def test_snapshot_restore_succeeds_and_leaves_nothing(vercel):
    result = run(vercel, None, benchmark="snapshot-restore")
    assert result.outcome == "success", result.cause
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    assert [c["confirmed_gone"] for c in cleanups if "snapshot" in c] == [True]
    assert vercel.provider.list_sandboxes("bb-pytest-cloud") == []
    assert vercel.fake.snapshots == {}


def test_bench_cleanup_removes_left_snapshots_of_boxbench_only(db, tmp_path):
    with demo.demo_session(["vercel"], root=str(tmp_path)) as fakes:
        provider = get_provider("vercel")
        source = ready(provider, dataclasses.replace(SPEC, label="bb-left"))
        left = provider.snapshot(source)
        foreign = ready(provider, dataclasses.replace(SPEC, label="someone-else"))
        kept = provider.snapshot(foreign)
        out = io.StringIO()
        call_command("bench", "cleanup", "--provider", "vercel", "--max-age", "0", stdout=out)
        assert f"removed vercel {left} label=bb-left" in out.getvalue()
        assert list(fakes["vercel"].snapshots) == [kept]


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_of_snapshot_restore_succeeds_and_leaves_nothing(monkeypatch):
    def leftovers(fake):
        return {"sandboxes": sorted(fake.records), "snapshots": list(fake.snapshots)}

    # Fork is refused (Not Supported): the run holds the three snapshot-restore trials. Their
    # six creates and restores would wait 30 s each for Vercel's declared rate: the claim here is
    # the copies and what is left, so they go unspaced.
    unspaced_creates(monkeypatch)
    trials, left, _ = demo_run(monkeypatch, "vercel", leftovers)
    assert trials == [("success", "")] * 3
    assert left == {"sandboxes": [], "snapshots": []}
