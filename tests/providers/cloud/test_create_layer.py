"""Create on the cloud adapters starts from a layer unique to the trial, built untimed through
each provider's own image or template mechanism against its loopback fake, and deleted after it
(runner/layers.py); a provider with no such mechanism is refused Create, never measured another
way."""

import pytest

from runner import rules
from runner.benchmarks import create
from runner.benchmarks.base import BenchmarkError
from runner.declarations import get_declaration
from runner.layers import LAYER_FILE, prepare
from runner.outcomes import EvidenceKind
from tests.providers.cloud.helpers import run as run_trial
from tests.providers.cloud.helpers import running_cloud as running

CLOUD = ["daytona", "e2b", "modal", "vercel"]


def _layer_trial(cloud):
    """A Create trial whose procedure also reads the layer's file in the created sandbox."""
    seen = {}

    def procedure(ctx):
        seen["file"] = ctx.exec(["/bin/cat", LAYER_FILE], timeout=30).stdout.decode()
        create.run(ctx)

    return run_trial(cloud, procedure, benchmark="create"), seen


@pytest.mark.parametrize("slug", CLOUD)
def test_each_create_starts_from_a_layer_of_its_own_built_by_the_providers_mechanism(
    slug, tmp_path
):
    with running(slug, tmp_path / "fake") as cloud:
        layers = []
        for _ in range(2):
            result, seen = _layer_trial(cloud)
            assert (result.outcome, result.cause) == ("success", "")
            [layer] = [
                e.data
                for e in result.evidence
                if e.kind == EvidenceKind.SNAPSHOT and "layer" in e.data
            ]
            assert seen["file"] == layer["token"]  # the timed create's sandbox holds the layer
            assert result.placement["unique_layer"] == layer["layer"]
            assert layer["mechanism"] == cloud.provider.layer_mechanism
            assert cloud.provider.snapshot_gone(layer["layer"])
            layers.append(layer["layer"])
        assert layers[0] != layers[1]
        assert cloud.provider.list_sandboxes("bb-pytest-cloud") == []


@pytest.mark.parametrize("slug", ["agentcore", "apple-container"])
def test_a_provider_with_no_layer_mechanism_is_not_supported_on_create(slug):
    refused = rules.refusals(get_declaration(slug), create.DEFINITION, 1)
    assert [(r.code, r.missing, r.label) for r in refused] == [
        ("R401", "unique_layer", "Not Supported")
    ]


def test_an_adapter_that_builds_no_layer_never_creates_another_way():
    class NoLayer:
        slug = "nolayer"
        layer_mechanism = layer_needless = ""

    class Context:
        provider = NoLayer()

        def create_sandbox(self, *args, **kwargs):
            raise AssertionError("no sandbox may be made for a layer that cannot be built")

    with pytest.raises(BenchmarkError, match="nolayer builds no per-trial layer"):
        prepare(Context())
