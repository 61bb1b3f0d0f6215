"""CI pipelines on the `docker` provider (Podman here): the standard image's toolchain builds the
artifacts pinned on `local`, byte for byte."""

from dataclasses import replace

import pytest

from runner import lifecycle
from runner.benchmarks import ci_pipelines
from runner.limits import Limits
from runner.pipelines.format import PIPELINES_DIR, load_pipeline

pytestmark = pytest.mark.podman

LIMITS = Limits(poll_interval_s=0.1)
# The quickest unit of each ecosystem: a wheel, and a static library.
UNITS = ["inflection-ci", "xxhash-ci"]
# The job host has 2 cores; the size is not what this test checks.
DEFINITION = replace(ci_pipelines.DEFINITION, cpus=2, memory_mib=4096)


@pytest.mark.parametrize("slug", UNITS)
def test_it_replays_a_pipeline_on_docker_with_the_artifacts_pinned_on_local(
    slug, docker_provider, batch_label
):
    unit = next(u for u in ci_pipelines.units() if u.slug == slug)
    result = lifecycle.run_trial(
        docker_provider, DEFINITION, unit, ci_pipelines.run, label=batch_label, limits=LIMITS
    )
    assert (result.outcome, result.cause) == ("success", "")
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    assert replayed["digest"] == load_pipeline(PIPELINES_DIR / slug / "pipeline.json").patch_sha256
    assert replayed["proxy_port"] > 0
    assert "pipeline_time" in {m.name for m in result.measurements if m.kind == "metric"}
    assert result.cleanup_verified and docker_provider.list_sandboxes(batch_label) == []
