"""Daytona's snapshots and forks, through its SDK against the loopback fake: the copy holds the
files written before it and not those written after, every snapshot is deleted and confirmed
gone, Daytona's refusals are named provider failures, an answer naming another snapshot never
turns a delete onto it, and a demo run of both benchmarks leaves nothing."""

import dataclasses

import pytest

from runner import waiting
from runner.outcomes import EvidenceKind
from runner.providers import snapshot_names
from runner.providers.base import CredentialsRejected, ProviderError
from runner.providers.fakes import hostile
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
def daytona(tmp_path):
    with running_fake("daytona", tmp_path / "fake") as found:
        yield found


def gone(provider, snapshot_id: str) -> bool:
    return waiting.poll_until(lambda: provider.snapshot_gone(snapshot_id), 5, waiting.every(0.02))


def made(fake) -> list[str]:
    """The snapshots of sandboxes the fake holds (not the prepared ones)."""
    return [s.name for s in fake.catalog.values() if s.local is not None]


def test_a_restored_snapshot_holds_the_files_from_before_it_and_is_deleted(daytona):
    provider, fake = daytona.provider, daytona.fake
    source, snapshot_id, restored = restored_copy(provider)
    assert fake.backend.get(source.id).extra["state"] == "started"  # back from snapshotting
    # Found by its batch label, as `bench cleanup` looks for it; the prepared one has no label.
    [listed] = provider.list_snapshots(SPEC.label)
    assert listed.id == snapshot_id and listed.created_at is not None
    labels = {s.id: s.label for s in provider.list_snapshots()}
    assert labels == {snapshot_id: SPEC.label, "boxbench-standard": ""}
    assert not provider.snapshot_gone(snapshot_id)
    for sandbox in (restored, source):
        provider.destroy(sandbox)
    provider.delete_snapshot(snapshot_id)
    # Daytona removes a snapshot in the background: `removing` first, then gone.
    assert gone(provider, snapshot_id)
    assert made(fake) == [] and "boxbench-standard" in fake.catalog
    provider.delete_snapshot(snapshot_id)  # already gone: what a delete wants
    with pytest.raises(ProviderError) as refused:
        provider.restore(snapshot_id, SPEC)
    # Daytona answers a create from a snapshot it does not have with 400, not 404.
    assert (refused.value.operation, refused.value.code) == ("restore", "400")
    assert "not found" in str(refused.value)


def test_a_snapshot_daytona_did_not_keep_is_a_named_failure(daytona, monkeypatch):
    # Daytona puts the sandbox back whether or not its runner kept the snapshot, and the SDK
    # returns either way: the adapter looks the snapshot up, and takes only an active one made
    # of this sandbox.
    provider, fake = daytona.provider, daytona.fake
    first, second = ready(provider), ready(provider)
    kept = provider.snapshot(first)
    # A name already taken leaves no new snapshot: the lookup finds the one of that name.
    monkeypatch.setattr(snapshot_names, "make", lambda label: kept)
    fake.catalog[kept].state = "error"
    # The timed call returns the name; the untimed check after it finds the failure.
    assert provider.snapshot(first) == kept
    with pytest.raises(ProviderError, match="is error, not active") as failed:
        provider.check_snapshot(first, kept)
    assert (failed.value.operation, failed.value.code) == ("snapshot", "error")
    # Here the name is the first sandbox's snapshot: never the second one's copy.
    fake.catalog[kept].state = "active"
    with pytest.raises(ProviderError, match="made of sandbox") as other:
        provider.check_snapshot(second, provider.snapshot(second))
    assert (other.value.operation, other.value.code) == ("snapshot", "bad_answer")
    assert made(fake) == [kept]
    for sandbox in (first, second):
        provider.destroy(sandbox)
    provider.delete_snapshot(kept)
    assert gone(provider, kept)


def test_a_fork_holds_the_files_from_before_it_and_carries_the_batch_label(daytona):
    provider = daytona.provider
    source, copy = forked_copy(provider)
    assert copy.facts["sandbox_class"] == "linux-vm"
    assert sorted(s.id for s in provider.list_sandboxes(SPEC.label)) == sorted([source.id, copy.id])
    for sandbox in (copy, source):
        provider.destroy(sandbox)
    assert made(daytona.fake) == []


@pytest.mark.parametrize("slug", ["snapshot-restore", "fork"])
def test_each_copy_benchmark_succeeds_and_leaves_nothing(daytona, slug):
    result = run(daytona, None, benchmark=slug)
    assert result.outcome == "success", result.cause
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    cleaned = [c for c in cleanups if "snapshot" in c]
    assert [c["confirmed_gone"] for c in cleaned] == ([True] if slug != "fork" else [])
    assert daytona.provider.list_sandboxes("bb-pytest-cloud") == [] and made(daytona.fake) == []


def test_daytonas_refusals_are_named_provider_failures(tmp_path):
    with running_fake("daytona", tmp_path, max_concurrent=2) as found:
        provider, fake = found.provider, found.fake
        source = ready(provider)
        gone_box = dataclasses.replace(source, id="00000000-gone", handle=None)
        for call in (lambda: provider.snapshot(gone_box), lambda: provider.fork(gone_box, SPEC)):
            with pytest.raises(ProviderError) as missing:
                call()
            assert missing.value.code == "not_found"
        with pytest.raises(CredentialsRejected):
            found.adapter(api_key="dtn_wrong").snapshot(dataclasses.replace(source, handle=None))
        # Not started: Daytona snapshots and forks only a started (or stopped) sandbox.
        fake.backend.get(source.id).extra["state"] = "stopping"
        for call in (lambda: provider.snapshot(source), lambda: provider.fork(source, SPEC)):
            with pytest.raises(ProviderError, match="HTTP 400") as refused:
                call()
            assert refused.value.code == "400"
        fake.backend.get(source.id).extra["state"] = "started"
        other = provider.create(SPEC)
        with pytest.raises(ProviderError) as capped:  # the account's two sandboxes are taken
            provider.fork(source, SPEC)
        assert (capped.value.operation, capped.value.code) == ("fork", "rate_limited")
        for sandbox in (other, source):
            provider.destroy(sandbox)


def test_a_fork_that_fails_to_start_is_deleted(daytona):
    provider, fake = daytona.provider, daytona.fake
    source = ready(provider)

    def failed(request):  # a fork's state, as the SDK's wait polls it, in error
        box = fake.find(request.path.rsplit("/", 1)[1])
        dto = fake.dto(box)
        if dto["name"].startswith(f"{SPEC.label}-fork-") and box.extra["state"] == "started":
            dto.update(state="error", errorReason="planted: the runner could not start it")
        return Response.json(200, dto)

    daytona.api.faults.add("GET", "^/api/sandbox/[^/]+$", times=100, answer=failed)
    with pytest.raises(ProviderError, match="planted") as refused:
        provider.fork(source, SPEC)
    assert refused.value.operation == "fork"
    # Found by the name the adapter gave it, and deleted: only the source is left.
    daytona.api.faults.clear()
    assert [s.id for s in provider.list_sandboxes(SPEC.label)] == [source.id]
    provider.destroy(source)


def test_answers_the_sdk_cannot_read_are_bad_answers(daytona):
    provider = daytona.provider
    source = ready(provider)
    daytona.api.faults.add("POST", "/snapshot$", answer=lambda r: hostile.html())
    with pytest.raises(ProviderError, match="not JSON") as snapshot:
        provider.snapshot(source)
    assert (snapshot.value.operation, snapshot.value.code) == ("snapshot", "bad_answer")
    daytona.api.faults.add("POST", "/fork$", status=200, body={"state": "started"})
    with pytest.raises(ProviderError, match="missing required field") as fork:
        provider.fork(source, SPEC)
    assert (fork.value.operation, fork.value.code) == ("fork", "bad_answer")
    provider.destroy(source)


def test_a_container_sandbox_is_not_forked(tmp_path):
    # Daytona forks VM sandboxes only: the prepared snapshot's class decides (docs/providers.md).
    with running_fake("daytona", tmp_path, sandbox_class="container") as found:
        provider = found.provider
        source = ready(provider)
        with pytest.raises(ProviderError, match="Forking is not supported") as refused:
            provider.fork(source, SPEC)
        assert (refused.value.operation, refused.value.code) == ("fork", "422")
        assert [s.id for s in provider.list_sandboxes(SPEC.label)] == [source.id]
        provider.destroy(source)


def test_an_answer_naming_another_snapshot_never_deletes_it(daytona):
    provider, fake = daytona.provider, daytona.fake
    source = ready(provider)
    snapshot_id = provider.snapshot(source)
    prepared = fake.catalog["boxbench-standard"]
    for answer in (prepared.dto(), {**fake.catalog[snapshot_id].dto(), "general": True}):
        daytona.api.faults.add("GET", f"^/api/snapshots/{snapshot_id}$", status=200, body=answer)
        with pytest.raises(ProviderError, match="asked for snapshot") as refused:
            provider.delete_snapshot(snapshot_id)
        assert (refused.value.operation, refused.value.code) == ("delete snapshot", "bad_answer")
    assert prepared.state == "active" and made(fake) == [snapshot_id]
    daytona.api.faults.add("GET", "^/api/snapshots/", status=200, body={"id": snapshot_id})
    with pytest.raises(ProviderError, match="missing required field") as malformed:
        provider.snapshot_gone(snapshot_id)
    assert malformed.value.code == "bad_answer"
    provider.destroy(source)
    provider.delete_snapshot(snapshot_id)
    assert gone(provider, snapshot_id) and "boxbench-standard" in fake.catalog


def test_bench_cleanup_removes_left_snapshots_of_boxbench_only(db, tmp_path):
    with cleaned_up("daytona", tmp_path) as (provider, fake, left, kept):
        assert gone(provider, left)
        assert made(fake) == [kept] and "boxbench-standard" in fake.catalog


@pytest.mark.django_db(transaction=True)
def test_a_demo_run_of_snapshots_and_forks_succeeds_and_leaves_nothing(monkeypatch):
    def leftovers(fake):
        return {"sandboxes": list(fake.backend.boxes), "snapshots": made(fake)}

    # Two sandboxes a trial, and Tier 1 allows two: one trial at a time.
    trials, left, _ = demo_run(monkeypatch, "daytona", leftovers, "--concurrency", "1")
    assert trials == [("success", "")] * 6
    assert left == {"sandboxes": [], "snapshots": []}


def test_only_forks_source_starts_from_the_vm_snapshot(tmp_path):
    # Daytona forks VM sandboxes only and a sandbox's class is its snapshot's: Fork's source
    # starts from the linux-vm fork snapshot, every other benchmark's sandbox stays in the
    # default (container) class of the standard snapshot.
    snapshots = {"boxbench-standard": (2, 4, "container"), "boxbench-fork": (2, 4, "linux-vm")}
    with running_fake("daytona", tmp_path, snapshots=snapshots) as found:
        provider = found.provider
        plain = ready(provider)
        source = ready(provider, dataclasses.replace(SPEC, forks=True))
        assert (plain.facts["sandbox_class"], source.facts["sandbox_class"]) == (
            "container",
            "linux-vm",
        )
        copy = provider.fork(source, SPEC)
        assert copy.facts["forked_from"] == source.id
        for sandbox in (copy, source, plain):
            provider.destroy(sandbox)


def test_a_fork_trial_runs_with_the_standard_snapshot_in_the_container_class(tmp_path):
    # The lifecycle asks for a forkable source on Fork alone (SandboxSpec.forks): with a
    # container-class standard snapshot, the trial still forks, from the fork snapshot.
    snapshots = {"boxbench-standard": (2, 4, "container"), "boxbench-fork": (2, 4, "linux-vm")}
    with running_fake("daytona", tmp_path, snapshots=snapshots) as found:
        result = run(found, None, benchmark="fork")
        assert result.outcome == "success", result.cause


def test_the_lifecycle_checks_the_snapshot_outside_its_timed_call(daytona, monkeypatch):
    # The timed snapshot holds only Daytona's snapshot call: the GET that confirms the snapshot
    # is kept runs after it, and a snapshot that was not kept fails the trial as the provider's.
    provider, checked = daytona.provider, []
    monkeypatch.setattr(provider, "check_snapshot", lambda box, name: checked.append(name))
    assert run(daytona, None, benchmark="snapshot-restore").outcome == "success"
    assert len(checked) == 1

    def not_kept(box, name):
        raise ProviderError(f"daytona snapshot: {name} is error, not active", "snapshot")

    monkeypatch.setattr(provider, "check_snapshot", not_kept)
    result = run(daytona, None, benchmark="snapshot-restore")
    assert result.outcome == "provider_failure" and "not active" in result.cause
