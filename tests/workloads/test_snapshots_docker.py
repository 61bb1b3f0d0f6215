"""Snapshot and Restore, and Fork on the `docker` provider (Podman here): image commits restored
as new containers, every image deleted and confirmed gone."""

import pytest

from runner import lifecycle
from runner.benchmarks.snapshots import FORK, SNAPSHOT_RESTORE
from runner.outcomes import EvidenceKind
from runner.providers.base import SandboxSpec
from tests.support.runner import FAST

pytestmark = pytest.mark.podman


def snapshot_cleanups(result):
    """The cleanup evidence of each snapshot or temporary image the trial made."""
    cleanups = [e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP]
    return [data for data in cleanups if "snapshot" in data]


@pytest.mark.parametrize("benchmark", [SNAPSHOT_RESTORE, FORK], ids=lambda b: b.DEFINITION.slug)
def test_it_copies_a_container_and_leaves_no_image_behind(docker_provider, batch_label, benchmark):
    result = lifecycle.run_trial(
        docker_provider,
        benchmark.DEFINITION,
        benchmark.units()[0],
        benchmark.run,
        label=batch_label,
        limits=FAST,
    )
    assert (result.outcome, result.cause) == ("success", "")
    names = {m.name for m in result.measurements}
    assert benchmark.DEFINITION.metric in names and "first_command" in names
    images = [
        e.data for e in result.evidence if e.kind == EvidenceKind.CLEANUP and "snapshot" in e.data
    ]
    assert len(images) == 1 and images[0]["confirmed_gone"]
    assert docker_provider.snapshot_gone(images[0]["snapshot"])
    assert docker_provider.list_snapshots(batch_label) == []
    assert docker_provider.list_sandboxes(batch_label) == []


def test_a_deleted_snapshot_is_confirmed_gone_and_a_kept_one_is_not(docker_provider, batch_label):
    spec = SandboxSpec(cpus=1, memory_mib=2048, label=batch_label, lifetime_s=120)
    sandbox = docker_provider.create(spec)
    snapshot_id = docker_provider.snapshot(sandbox)
    docker_provider.destroy(sandbox)
    assert not docker_provider.snapshot_gone(snapshot_id)
    docker_provider.delete_snapshot(snapshot_id)
    assert docker_provider.snapshot_gone(snapshot_id)
