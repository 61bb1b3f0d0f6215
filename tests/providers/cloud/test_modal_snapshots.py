"""Modal's snapshots, through the real `modal` client against the loopback gRPC fake: a sandbox
restored from `snapshot_filesystem`'s image holds the files written before it and not those
written after, every snapshot image is deleted and confirmed gone, Modal's refusals are named
provider failures, an answer naming the standard image never leads to its deletion, and `bench
cleanup` finds leftovers through boxbench's own ledger."""

import pytest

pytest.importorskip(
    "modal", reason="the modal SDK is optional: pip install -r requirements-modal.txt"
)

from grpclib import Status

from runner.outcomes import EvidenceKind
from runner.providers.base import CredentialsRejected, ProviderError
from tests.providers.cloud.copies import (
    SPEC,
    cleaned_up,
    demo_run,
    ready,
    restored_copy,
)
from tests.providers.cloud.helpers import run
from tests.providers.cloud.modal_helpers import running_modal


@pytest.fixture
def modal(tmp_path):
    with running_modal(tmp_path / "fake") as found:
        yield found


def standard_image(fake) -> str:
    [image_id] = fake.images.values()
    return image_id


def test_a_restored_snapshot_holds_the_files_from_before_it_and_is_deleted(modal):
    provider, fake = modal.provider, modal.fake
    source, snapshot_id, restored = restored_copy(provider)
    assert snapshot_id in fake.snapshots and snapshot_id != standard_image(fake)
    # Found by its batch label in the ledger, as `bench cleanup` looks for it.
    [listed] = provider.list_snapshots(SPEC.label)
    assert listed.id == snapshot_id and listed.created_at is not None
    assert provider.list_snapshots("bb-another") == []
    assert not provider.snapshot_gone(snapshot_id)
    for sandbox in (restored, source):
        provider.destroy(sandbox)
    provider.delete_snapshot(snapshot_id)
    assert provider.snapshot_gone(snapshot_id) and fake.snapshots == {}
    assert provider.list_snapshots() == []
    provider.delete_snapshot(snapshot_id)  # NOT_FOUND: gone already, as a delete wants
    assert fake.deleted_images == [snapshot_id]
    with pytest.raises(ProviderError) as refused:
        provider.restore(snapshot_id, SPEC)
    assert (refused.value.operation, refused.value.code) == ("restore", "not_found")


def test_the_snapshot_benchmark_succeeds_and_leaves_nothing(modal):
    result = run(modal, None, benchmark="snapshot-restore")
    assert result.outcome == "success", result.cause
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    assert [c["confirmed_gone"] for c in cleanups if "snapshot" in c] == [True]
    assert modal.provider.list_sandboxes("bb-pytest-cloud") == []
    assert modal.fake.snapshots == {} and modal.provider.list_snapshots() == []


def test_a_snapshot_answer_naming_the_standard_image_is_refused_and_never_deleted(modal):
    provider, fake = modal.provider, modal.fake
    source = ready(provider)
    standard = standard_image(fake)
    fake.hostile("standard_snapshot")
    with pytest.raises(ProviderError, match="the standard image") as refused:
        provider.snapshot(source)
    assert (refused.value.operation, refused.value.code) == ("snapshot", "bad_answer")
    assert provider.list_snapshots() == []  # nothing for cleanup to delete
    # Nor does a delete asked for by id (a ledger or caller gone wrong) reach Modal.
    with pytest.raises(ProviderError, match="never deletes") as kept:
        provider.delete_snapshot(standard)
    assert kept.value.code == "bad_answer"
    assert fake.deleted_images == [] and fake.has_image(standard)
    # The whole trial: a provider failure, and the standard image is still there after cleanup.
    fake.hostile("standard_snapshot")
    result = run(modal, None, benchmark="snapshot-restore")
    assert result.outcome == "provider_failure" and "the standard image" in result.cause
    assert fake.deleted_images == [] and fake.has_image(standard)
    fake.hostile("empty_snapshot")  # no image id: the SDK refuses it before the adapter sees it
    with pytest.raises(ProviderError, match="does not start with") as empty:
        provider.snapshot(source)
    assert empty.value.code == "rejected" and provider.list_snapshots() == []
    provider.destroy(source)


def test_modals_refusals_are_named_provider_failures(tmp_path):
    with running_modal(tmp_path, max_concurrent=1) as found:
        provider, fake = found.provider, found.fake
        source = ready(provider)
        snapshot_id = provider.snapshot(source)
        with pytest.raises(ProviderError) as capped:  # the plan's one sandbox is the source
            provider.restore(snapshot_id, SPEC)
        assert (capped.value.operation, capped.value.code) == ("restore", "rate_limited")
        wrong = found.adapter(token_id="ak-wrong")
        with pytest.raises(CredentialsRejected):
            wrong.delete_snapshot(snapshot_id)
        fake.faults.add("TaskSnapshotFilesystem", Status.INVALID_ARGUMENT, message="bad request")
        with pytest.raises(ProviderError, match="bad request") as invalid:
            provider.snapshot(source)
        assert (invalid.value.operation, invalid.value.code) == ("snapshot", "rejected")
        fake.faults.add("ImageFromId", Status.NOT_FOUND, message="Image gone")
        assert provider.snapshot_gone(snapshot_id)  # what Modal says, even for an image it has
        provider.destroy(source)
        with pytest.raises(ProviderError) as ended:  # its sandbox has ended: no task any more
            provider.snapshot(source)
        assert ended.value.operation == "snapshot"
        provider.delete_snapshot(snapshot_id)
        assert provider.snapshot_gone(snapshot_id)


def test_bench_cleanup_removes_left_snapshots_of_boxbench_only(db, tmp_path):
    with cleaned_up("modal", tmp_path) as (provider, fake, left, kept):
        assert list(fake.snapshots) == [kept]
        assert [s.id for s in provider.list_snapshots()] == [kept]


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_of_snapshots_succeeds_fork_is_refused_and_nothing_is_left(monkeypatch):
    def leftovers(fake):
        running = [b.id for b in fake.records.values() if fake.result(b) is None]
        return {"sandboxes": running, "snapshots": list(fake.snapshots)}

    trials, left, out = demo_run(monkeypatch, "modal", leftovers)
    assert trials == [("success", "")] * 3
    assert "modal does not declare fork" in out
    assert left == {"sandboxes": [], "snapshots": []}
