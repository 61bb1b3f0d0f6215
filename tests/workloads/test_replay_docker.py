"""Trace replay on the `docker` provider (Podman here): the same digest as on `local`.

The standard image (runner/images/) is prepared by the provider tests' fixture: built once per
machine and cached, so only the first session on a new machine pays for debootstrap.
"""

from dataclasses import replace

import pytest

from runner import lifecycle
from runner.benchmarks import deepswe
from runner.limits import Limits
from runner.traces.format import load_trace

pytestmark = pytest.mark.podman

LIMITS = Limits(poll_interval_s=0.1)
# The quickest unit of each kind that needs more than the shell: Python tests, and a C build.
UNITS = ["six-ensure-bytearray", "xxhash-c-selftest"]
# The job host has 2 cores; the size is not what this test checks.
DEFINITION = replace(deepswe.DEFINITION, cpus=2, memory_mib=4096)


def _replay(provider, slug, label):
    unit = next(u for u in deepswe.units() if u.slug == slug)
    result = lifecycle.run_trial(
        provider, DEFINITION, unit, deepswe.run, label=label, limits=LIMITS
    )
    assert (result.outcome, result.cause) == ("success", "")
    assert result.cleanup_verified
    return next(e.data for e in result.evidence if e.kind == "replay"), result


@pytest.mark.parametrize("slug", UNITS)
def test_it_replays_a_trace_on_docker_with_the_digest_it_gives_on_local(
    slug, docker_provider, batch_label, local
):
    on_docker, result = _replay(docker_provider, slug, batch_label)
    on_local, _ = _replay(local, slug, "test")
    expected = load_trace(deepswe.TRACES_DIR / slug / "trace.json").patch_sha256
    assert on_docker["digest"] == on_local["digest"] == expected
    assert on_docker["proxy_port"] > 0
    sandbox = next(e.data for e in result.evidence if e.kind == "sandbox")
    assert sandbox["facts"]["image_digest"].startswith("sha256:")
    stages = {m.name: m.value for m in result.measurements if m.kind == "stage"}
    assert set(stages) == set(deepswe.DEFINITION.stage_names)
    assert docker_provider.list_sandboxes(batch_label) == []
