"""Terminal-Bench-style tasks on the `docker` provider (Podman here): shipped oracles pass their
verifiers on the standard image, at the task's declared size. Two tasks keep CI short: a C
build from source, and one whose Dockerfile builds a git repository with RUN."""

import shutil

import pytest

from runner import lifecycle, rules
from runner.benchmarks import terminal_bench
from runner.declarations import get_declaration
from runner.limits import Limits
from runner.tasks import imported
from runner.tasks.format import TASKS_DIR

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
    [made] = [e.data for e in result.evidence if e.kind == "sandbox"]
    assert (made["facts"]["cpus"], made["facts"]["memory_mib"]) == (2, 4096)
    assert result.cleanup_verified and docker_provider.list_sandboxes(batch_label) == []


def test_a_task_needing_its_own_image_is_built_on_docker_and_not_supported_on_local(
    docker_provider, batch_label, tmp_path, monkeypatch
):
    """USER and SHELL are not replayed in a sandbox: the engine builds the Dockerfile."""
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    folder = tmp_path / "source" / "built-wordfreq"
    shutil.copytree(TASKS_DIR / "c-build-wordfreq", folder)
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(
        dockerfile.read_text().replace("WORKDIR /app", 'SHELL ["/bin/bash", "-c"]\nWORKDIR /app')
        + "RUN echo built > /etc/task-image\nUSER root\n"
    )
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 2", "cpus = 1").replace("4096", "2048"))
    imported.import_tasks(folder.parent)
    unit = next(u for u in terminal_bench.units() if u.slug == "built-wordfreq")
    [refused] = rules.unit_refusals(get_declaration("local"), terminal_bench.DEFINITION, [unit])
    assert (refused.code, refused.label) == ("R401", "Not Supported")
    assert (
        "needs an image build (line 2: SHELL is not replayed), and local sandboxes bind"
        in refused.message
    )
    assert rules.unit_refusals(get_declaration("docker"), terminal_bench.DEFINITION, [unit]) == []
    result = lifecycle.run_trial(
        docker_provider,
        terminal_bench.DEFINITION,
        unit,
        terminal_bench.run,
        label=batch_label,
        limits=LIMITS,
    )
    assert (result.outcome, result.cause) == ("success", "")
    [made] = [e.data for e in result.evidence if e.kind == "sandbox"]
    assert made["facts"]["image_digest"].startswith("sha256:")
    assert made["facts"]["image"] == made["facts"]["image_digest"]
    # The task's declared size (task.toml [environment]), not the benchmark's 2 vCPU / 4 GiB.
    assert (made["facts"]["cpus"], made["facts"]["memory_mib"]) == (1, 2048)
