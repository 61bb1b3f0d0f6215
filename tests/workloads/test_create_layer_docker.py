"""Create on `docker` (Podman here) starts from the pinned base plus a layer unique to the trial,
built untimed and deleted after it (runner/layers.py)."""

import pytest

from runner import lifecycle
from runner.benchmarks import create
from runner.layers import LAYER_FILE
from runner.outcomes import EvidenceKind
from runner.providers.docker import DockerProvider
from tests.support.runner import FAST

pytestmark = pytest.mark.podman


def _layer_trial(provider, label):
    """A Create trial whose procedure also reads the layer's file in the created sandbox."""
    seen = {}

    def procedure(ctx):
        seen["file"] = ctx.exec(["/bin/cat", LAYER_FILE], timeout=30).stdout.decode()
        create.run(ctx)

    result = lifecycle.run_trial(
        provider, create.DEFINITION, create.units()[0], procedure, label=label, limits=FAST
    )
    return result, seen


def _layer(result) -> dict:
    return next(
        e.data for e in result.evidence if e.kind == EvidenceKind.SNAPSHOT and "layer" in e.data
    )


def test_each_create_starts_from_a_layer_of_its_own_and_deletes_it(docker_provider, batch_label):
    layers = []
    for _ in range(2):
        result, seen = _layer_trial(docker_provider, batch_label)
        assert (result.outcome, result.cause) == ("success", "")
        layer = _layer(result)
        assert seen["file"] == layer["token"]  # the created sandbox holds this trial's layer
        assert result.placement["unique_layer"] == layer["layer"] == result.placement["image"]
        assert docker_provider.snapshot_gone(layer["layer"])
        layers.append(layer["layer"])
    assert layers[0] != layers[1]
    assert docker_provider.list_snapshots(batch_label) == []
    assert docker_provider.list_sandboxes(batch_label) == []


class KeepsImages(DockerProvider):
    def delete_snapshot(self, snapshot_id):
        pass  # answers as if deleted, but the image stays


def test_a_layer_never_confirmed_gone_fails_the_create_trial(docker_provider, batch_label):
    keeps = KeepsImages(docker_provider.declaration, docker_provider.settings)
    result, _ = _layer_trial(keeps, batch_label)
    assert result.outcome == "provider_failure" and not result.cleanup_verified
    assert result.cause.startswith("cleanup not verified: snapshot sha256:")
    assert len(docker_provider.list_snapshots(batch_label)) == 1  # the fixture removes it
