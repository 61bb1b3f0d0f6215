"""Snapshot and Restore, and Fork on real `local` sandboxes: what they measure, the copy's state
they verify, the snapshots they must delete, and the clock gate on a restored sandbox."""

import pytest

from runner import rules
from runner.benchmarks import create
from runner.benchmarks.snapshots import AFTER, FORK, SNAPSHOT_RESTORE
from runner.declarations import get_declaration
from runner.lifecycle import run_trial
from runner.outcomes import EvidenceKind
from runner.providers.base import ProviderError, SandboxSpec
from runner.providers.local import LocalProvider
from tests.runner.faults import _step
from tests.support.runner import FAST

COPIES = [SNAPSHOT_RESTORE, FORK]


def snapshot_cleanups(result):
    """The cleanup evidence of each snapshot or temporary image the trial made."""
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    return [data for data in cleanups if "snapshot" in data]


def _run(provider, benchmark, limits=FAST):
    definition = benchmark.DEFINITION
    return run_trial(
        provider, definition, benchmark.units()[0], benchmark.run, label="bb-snap", limits=limits
    )


@pytest.fixture
def make_local(tmp_path):
    """A `local` of the given class with its sandboxes under this test's directory; whatever it
    leaves is removed afterwards."""
    made = []

    def make(cls=LocalProvider):
        provider = cls(get_declaration("local"), {"root": tmp_path / "sandboxes"})
        made.append(provider)
        return provider

    yield make
    for provider in made:
        for sandbox in provider.list_sandboxes():
            provider.destroy(sandbox)
        for snapshot in provider.list_snapshots():
            LocalProvider.delete_snapshot(provider, snapshot.id)


def test_snapshot_and_restore_times_both_and_deletes_the_snapshot(local):
    result = _run(local, SNAPSHOT_RESTORE)
    assert (result.outcome, result.cause) == ("success", "")
    values = {(m.kind, m.name): m.value for m in result.measurements}
    metric = values["metric", "snapshot_restore_ms"]
    assert metric == pytest.approx(values["metric", "snapshot_ms"] + values["metric", "restore_ms"])
    stages = values["stage", "restore"] + values["stage", "first_command"]
    assert values["metric", "restore_ms"] == pytest.approx(stages)
    cleaned = [
        e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP and "snapshot" in e.data
    ]
    assert len(cleaned) == 1 and cleaned[0]["confirmed_gone"]
    made = [e.data for e in result.evidence if e.kind == EvidenceKind.SANDBOX]
    assert [m["name"] for m in made] == ["create", "restore"]
    # The restored sandbox got no untimed readiness check: its only attempts are the timed ones.
    checked = [e.data["sandbox"] for e in result.evidence if e.kind == EvidenceKind.READINESS]
    assert checked == [made[0]["id"], made[1]["id"]]
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


def test_fork_times_the_copy_until_it_answers_and_deletes_its_temporary_copy(local):
    result = _run(local, FORK)
    assert (result.outcome, result.cause) == ("success", "")
    values = {(m.kind, m.name): m.value for m in result.measurements}
    assert values["metric", "fork_ms"] >= values["stage", "fork"] > 0
    cleaned = [
        e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP and "snapshot" in e.data
    ]
    assert len(cleaned) == 1 and cleaned[0]["confirmed_gone"]
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


class KeepsSnapshots(LocalProvider):
    def delete_snapshot(self, snapshot_id):
        pass  # answers as if deleted, but the snapshot stays


@pytest.mark.parametrize("benchmark", COPIES, ids=lambda b: b.DEFINITION.slug)
def test_a_snapshot_never_confirmed_gone_fails_the_trial(make_local, benchmark):
    provider = make_local(KeepsSnapshots)
    result = _run(provider, benchmark)
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert result.cause.startswith("cleanup not verified: snapshot ls-")
    assert len(provider.list_snapshots()) == 1 and provider.list_sandboxes() == []


class FreshRestore(LocalProvider):
    def restore(self, snapshot_id, spec):
        return self.create(spec)  # the snapshot's state is lost


class LeakyRestore(LocalProvider):
    def restore(self, snapshot_id, spec):
        sandbox = super().restore(snapshot_id, spec)
        self.exec(sandbox, ["/bin/sh", "-c", f"echo later > {AFTER}"], 30)
        return sandbox


@pytest.mark.parametrize(
    ("cls", "why"),
    [
        (FreshRestore, "the file written before the copy is missing"),
        (LeakyRestore, "the file written after the copy is there"),
    ],
)
@pytest.mark.parametrize("benchmark", COPIES, ids=lambda b: b.DEFINITION.slug)
def test_a_copy_with_the_wrong_state_is_the_providers_failure(make_local, benchmark, cls, why):
    provider = make_local(cls)
    result = _run(provider, benchmark)
    assert result.outcome == "provider_failure" and why in result.cause
    assert provider.list_snapshots() == [] and provider.list_sandboxes() == []


class SteppedRestoredClock(LocalProvider):
    """A restored sandbox whose guest wall clock steps 500 ms during each command."""

    restored: set[str] = set()

    def restore(self, snapshot_id, spec):
        sandbox = super().restore(snapshot_id, spec)
        self.restored.add(sandbox.id)
        return sandbox

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None):
        result = super().exec(sandbox, argv, timeout, stdin, workdir, env)
        if sandbox.id in self.restored and b"__SANDBOX_CLOCK" in result.stderr:
            result.stderr = _step(result.stderr, 500)
        return result


@pytest.mark.parametrize("benchmark", COPIES, ids=lambda b: b.DEFINITION.slug)
def test_the_clock_gate_catches_a_restored_clock_that_steps(make_local, benchmark):
    result = _run(make_local(SteppedRestoredClock), benchmark)
    assert result.outcome == "provider_failure" and result.cause.startswith("stepped clock")
    assert any(e.kind == EvidenceKind.CLOCK_GATE for e in result.evidence)


def test_a_hostile_snapshot_id_is_refused_before_any_sandbox_is_made(local):
    spec = SandboxSpec(cpus=1, memory_mib=2048, label="bb-hostile", lifetime_s=60)
    with pytest.raises(ProviderError, match="not a local snapshot id"):
        local.restore("../../etc", spec)
    with pytest.raises(ProviderError, match="not a local snapshot id"):
        local.delete_snapshot("ls-../../etc")
    assert local.list_sandboxes() == []


def test_a_left_snapshot_is_listed_by_label_for_cleanup(local):
    sandbox = local.create(SandboxSpec(cpus=1, memory_mib=2048, label="bb-left", lifetime_s=60))
    snapshot_id = local.snapshot(sandbox)
    local.destroy(sandbox)
    assert [s.id for s in local.list_snapshots("bb-left")] == [snapshot_id]
    assert local.list_snapshots("another") == []
    (local.root / "ls-0123456789abcdef").mkdir()  # unreadable metadata: still listed
    assert len(local.list_snapshots()) == 2


@pytest.mark.parametrize("benchmark", COPIES, ids=lambda b: b.DEFINITION.slug)
def test_a_provider_without_the_capability_is_refused_not_supported(benchmark):
    refused = rules.refusals(get_declaration("agentcore"), benchmark.DEFINITION, 1)
    assert [(r.code, r.label) for r in refused] == [("R401", "Not Supported")]
    for declaring in ("local", "docker", "e2b", "daytona"):
        assert rules.refusals(get_declaration(declaring), benchmark.DEFINITION, 1) == []


def test_create_on_local_says_it_has_no_layer_to_build(local):
    result = _run(local, create)
    assert (result.outcome, result.cause) == ("success", "")
    assert result.placement["unique_layer"] == "none: " + local.layer_needless
    assert local.list_snapshots() == [] and local.list_sandboxes() == []


def test_a_snapshot_past_the_download_cap_is_refused_by_name(tmp_path):
    small = LocalProvider(
        get_declaration("local"), {"root": tmp_path / "capped", "max_download_mib": 1}
    )
    sandbox = small.create(SandboxSpec(cpus=1, memory_mib=2048, label="bb-cap", lifetime_s=60))
    try:
        small.exec(sandbox, ["/bin/sh", "-c", "head -c 2097152 /dev/urandom > /app/big"], 30)
        with pytest.raises(ProviderError, match="max_download_mib"):
            small.snapshot(sandbox)
        assert small.list_snapshots() == []
    finally:
        small.destroy(sandbox)
