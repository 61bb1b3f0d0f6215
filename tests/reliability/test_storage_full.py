"""C8, the runtime's storage full: `local` with its sandbox root on a small tmpfs that each test
mounts for itself and each sandbox's /app capped at that size (never this machine's disk, never
Podman's storage). A create on full storage
is a provider failure naming the cause and leaves no directory behind; too little free space for
a disk test is a Missed trial (the pre-test check); a write that fills the storage is a provider
failure, refilled, and the run leaves nothing behind."""

import os
import re
import shutil
import subprocess
import uuid

import pytest

from boxbench.models import Outcome, RunStatus, Trial
from runner import lifecycle, steps
from runner.benchmarks import all_benchmarks
from runner.declarations import get_declaration
from runner.plan import plan_run
from runner.providers.local import LocalProvider
from tests.support.runner import FAST


@pytest.fixture
def small_storage(tmp_path):
    """Mount a tmpfs of the given size (MiB) as the root of a fresh `local` provider, whose
    sandboxes' /app (a tmpfs of its own) is capped at the same size."""
    mounted = []

    def mount(size_mib: int) -> LocalProvider:
        root = tmp_path / f"storage-{len(mounted)}"
        root.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(root)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (local needs root anyway): {done.stderr}")
        mounted.append(root)
        return LocalProvider(get_declaration("local"), {"root": root, "app_mib": size_mib})

    yield mount
    for root in mounted:
        provider = LocalProvider(get_declaration("local"), {"root": root})
        for sandbox in provider.list_sandboxes():
            provider.destroy(sandbox)
        subprocess.run(["umount", str(root)], check=True)


def fill(root) -> None:
    """Write until the storage refuses."""
    with open(root / "fill", "wb") as out:
        try:
            while True:
                out.write(b"\0" * 2**16)
                out.flush()
        except OSError as exc:
            assert exc.errno == 28  # ENOSPC


def trial(provider, slug: str):
    module = all_benchmarks()[slug]
    label = f"pytest-{uuid.uuid4().hex[:12]}"
    return lifecycle.run_trial(
        provider, module.DEFINITION, module.units()[0], module.run, label=label, limits=FAST
    )


def used_bytes(root) -> int:
    usage = shutil.disk_usage(root)
    return usage.total - usage.free


def test_a_create_on_full_storage_is_a_provider_failure_that_leaves_nothing(small_storage):
    local = small_storage(1)
    fill(local.root)

    result = trial(local, "create")

    assert (result.outcome, result.owner) == (Outcome.PROVIDER_FAILURE, "provider")
    assert "cannot write the sandbox's metadata" in result.cause
    assert "No space left on device" in result.cause
    assert local.list_sandboxes() == []
    assert os.listdir(local.root) == ["fill"]  # no half-made sandbox to refuse the next run


def test_less_free_space_than_a_disk_test_needs_makes_the_trial_missed(small_storage):
    local = small_storage(64)

    result = trial(local, "disk-seq")

    assert result.outcome == Outcome.MISSED, result.cause
    assert re.search(r"/app has 6\d MiB free; this test needs 512 MiB", result.cause)
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_a_write_that_fills_the_storage_is_a_provider_failure_refilled_then_nothing_is_left(
    chain_provider, small_storage, transactional_db
):
    local = chain_provider(small_storage(4))  # the 8 MiB upload cannot fit
    run = plan_run(
        "c8",
        benchmarks=["file-upload"],
        providers=["local"],
        trials=1,
        seed=1,
        concurrency=1,
        units={"file-upload": ["8mib"]},
    )
    run.transition(RunStatus.RUNNING)

    steps.execute_chain(run.pk, "local")

    run.refresh_from_db()
    trials = list(run.trials.order_by("seq"))
    assert len(trials) > 1 and trials[1].replaces_id == trials[0].pk  # refilled
    for failed in trials:
        assert (failed.outcome, failed.owner) == (Outcome.PROVIDER_FAILURE, "provider")
        assert "upload to /app/upload.bin failed" in failed.cause
        assert "No space left on device" in failed.cause
    assert run.status == RunStatus.FAILED and "no trial succeeded" in run.transitions.last().note
    assert local.list_sandboxes() == [] and used_bytes(local.root) == 0
    assert not Trial.objects.filter(run=run, cut_short=True).exists()
