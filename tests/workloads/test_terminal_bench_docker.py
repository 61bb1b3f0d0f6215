"""Terminal-Bench-style tasks on the `docker` provider (Podman here): shipped oracles pass their
verifiers on the standard image, at the task's declared size. Two tasks keep CI short: a C
build from source, and one whose Dockerfile builds a git repository with RUN."""

import pytest

from runner import lifecycle
from runner.benchmarks import terminal_bench
from runner.limits import Limits

pytestmark = pytest.mark.podman

LIMITS = Limits(poll_interval_s=0.1)
UNITS = ["c-build-wordfreq", "git-revert-regression"]


@pytest.mark.parametrize("slug", UNITS)
def test_it_replays_a_shipped_task_on_docker_with_its_oracle_passing(
    slug, docker_provider, batch_label
):
    unit = next(u for u in terminal_bench.units() if u.slug == slug)
    result = lifecycle.run_trial(
        docker_provider,
        terminal_bench.DEFINITION,
        unit,
        terminal_bench.run,
        label=batch_label,
        limits=LIMITS,
    )
    assert (result.outcome, result.cause) == ("success", "")
    assert {"task_time", "Solve", "Verify"} <= {m.name for m in result.measurements}
    # The task's declared size (task.toml [environment]), not the benchmark's.
    [made] = [e.data for e in result.evidence if e.kind == "sandbox"]
    assert (made["facts"]["cpus"], made["facts"]["memory_mib"]) == (1, 2048)
    assert result.cleanup_verified and docker_provider.list_sandboxes(batch_label) == []
