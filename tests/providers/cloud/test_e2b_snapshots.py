"""E2B's snapshots and forks, through its SDK against the loopback fake: the copy holds the files
written before it and not those written after, every snapshot is deleted and confirmed gone, the
fake's refusals are named provider failures, and a demo run of both benchmarks leaves nothing."""

import dataclasses
import json

import pytest

from boxbench.models import Run
from runner.outcomes import EvidenceKind
from runner.providers.base import ProviderError
from runner.providers.fakes.server import Response
from tests.providers.cloud.copies import (
    SPEC,
    cleaned_up,
    demo_run,
    forked_copy,
    ready,
    restored_copy,
)
from tests.providers.cloud.helpers import run, running_fake


@pytest.fixture
def e2b(tmp_path):
    with running_fake("e2b", tmp_path / "fake") as found:
        yield found


def test_a_restored_snapshot_holds_the_files_from_before_it_and_is_deleted(e2b):
    provider = e2b.provider
    source, snapshot_id, restored = restored_copy(provider)
    # Found by its batch label, as `bench cleanup` looks for it.
    [listed] = provider.list_snapshots(SPEC.label)
    assert listed.id == snapshot_id and listed.created_at is not None
    assert provider.list_snapshots("bb-another") == []
    assert not provider.snapshot_gone(snapshot_id)
    for sandbox in (restored, source):
        provider.destroy(sandbox)
    provider.delete_snapshot(snapshot_id)
    assert provider.snapshot_gone(snapshot_id) and e2b.fake.snapshots == {}
    provider.delete_snapshot(snapshot_id)  # already gone: what a delete wants
    with pytest.raises(ProviderError) as refused:
        provider.restore(snapshot_id, SPEC)
    assert (refused.value.operation, refused.value.code) == ("restore", "not_found")


def test_two_snapshots_of_one_batch_stay_apart(e2b):
    # E2B gives a name already taken a new build of the same snapshot: one batch's snapshots must
    # each have a name of their own, or one trial would restore another's.
    provider = e2b.provider
    source = ready(provider)
    first, second = provider.snapshot(source), provider.snapshot(source)
    assert first != second and len(e2b.fake.snapshots) == 2
    assert sorted(s.id for s in provider.list_snapshots(SPEC.label)) == sorted([first, second])
    provider.destroy(source)
    for snapshot_id in (first, second):
        provider.delete_snapshot(snapshot_id)


def test_a_fork_holds_the_files_from_before_it_and_the_source_keeps_running(e2b):
    provider = e2b.provider
    source, copy = forked_copy(provider)
    # The fork carries the source's metadata: cleanup finds it by the batch label.
    assert sorted(s.id for s in provider.list_sandboxes(SPEC.label)) == sorted([source.id, copy.id])
    for sandbox in (copy, source):
        provider.destroy(sandbox)
    assert provider.list_snapshots() == []


@pytest.mark.parametrize("slug", ["snapshot-restore", "fork"])
def test_each_copy_benchmark_succeeds_and_leaves_nothing(e2b, slug):
    result = run(e2b, None, benchmark=slug)
    assert result.outcome == "success", result.cause
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    cleaned = [c for c in cleanups if "snapshot" in c]
    assert [c["confirmed_gone"] for c in cleaned] == ([True] if slug != "fork" else [])
    assert e2b.provider.list_sandboxes("bb-pytest-cloud") == [] and e2b.fake.snapshots == {}


def test_the_fakes_refusals_are_named_provider_failures(tmp_path):
    with running_fake("e2b", tmp_path, max_concurrent=2) as found:
        provider = found.provider
        source = ready(provider)
        gone = dataclasses.replace(source, id="i0000000000000000000", handle=None)
        for call in (lambda: provider.snapshot(gone), lambda: provider.fork(gone, SPEC)):
            with pytest.raises(ProviderError) as missing:
                call()
            assert missing.value.code == "not_found"
        other = provider.create(SPEC)
        # At the concurrency cap the request succeeds and its one fork fails: 429 in the list.
        with pytest.raises(ProviderError) as capped:
            provider.fork(source, SPEC)
        assert (capped.value.operation, capped.value.code) == ("fork", "rate_limited")
        assert str(capped.value).startswith("e2b fork: HTTP 429")
        for sandbox in (other, source):
            provider.destroy(sandbox)


def test_answers_without_a_copy_are_named_and_leave_no_sandbox(e2b):
    provider, fake = e2b.provider, e2b.fake
    source = ready(provider)
    no_id = {"snapshotID": "", "names": []}
    e2b.api.faults.add("POST", "/snapshots$", status=201, body=no_id)
    with pytest.raises(ProviderError, match="snapshot id in the answer is empty") as empty:
        provider.snapshot(source)
    assert (empty.value.operation, empty.value.code) == ("snapshot", "bad_answer")
    e2b.api.faults.add("POST", "/fork$", status=201, body=[])
    with pytest.raises(ProviderError, match="holds 0 forks") as none:
        provider.fork(source, SPEC)
    assert none.value.code == "bad_answer"

    def two_forks(request):  # a fork asked for one and given two
        return fake.fork(dataclasses.replace(request, body=json.dumps({"count": 2}).encode()), box)

    box = fake.backend.get(source.id)
    e2b.api.faults.add("POST", "/fork$", answer=two_forks)
    with pytest.raises(ProviderError, match="holds 2 forks"):
        provider.fork(source, SPEC)
    assert [s.id for s in provider.list_sandboxes(SPEC.label)] == [source.id]
    e2b.api.faults.add("POST", "/fork$", answer=lambda r: Response.json(201, [{}]))
    with pytest.raises(ProviderError, match="Failed to start forked sandbox"):
        provider.fork(source, SPEC)
    provider.destroy(source)


def test_bench_cleanup_removes_left_snapshots_of_boxbench_only(db, tmp_path):
    with cleaned_up("e2b", tmp_path) as (_, fake, left, kept):
        assert [s.snapshot_id for s in fake.snapshots.values()] == [kept]


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_of_snapshots_and_forks_succeeds_and_leaves_nothing(monkeypatch):
    def leftovers(fake):
        return {"sandboxes": list(fake.backend.boxes), "snapshots": list(fake.snapshots)}

    trials, left, _ = demo_run(monkeypatch, "e2b", leftovers)
    assert trials == [("success", "")] * 6
    assert left == {"sandboxes": [], "snapshots": []}
    # The chain spaced its creates to E2B's declared rate and recorded it (the Vercel demo runs,
    # 30 s a create at its rate, go unspaced).
    spacing = Run.objects.get().typed_manifest.create_spacing["e2b"]
    assert (spacing.create_rate_per_s, spacing.min_interval_s) == (1.0, 1.0)
