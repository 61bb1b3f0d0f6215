"""What the snapshot and fork tests of the cloud adapters share: a ready sandbox, a file written
into it, the files a copy holds, and a demo run of the copy benchmarks that reports what the
fake still held when it stopped."""

from __future__ import annotations

import contextlib
import dataclasses
import io

from django.core.management import call_command

from boxbench.models import Run, Trial
from runner import chain, lifecycle
from runner.providers import demo
from runner.providers.base import SandboxSpec
from tests.providers.cloud.helpers import LIMITS

SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-pytest-snap", lifetime_s=120)
LIST = ["/bin/sh", "-c", "ls /app/state"]


def ready(provider, spec=SPEC):
    sandbox = provider.create(spec)
    lifecycle.readiness_check(provider, sandbox)
    return sandbox


def write(provider, sandbox, name: str) -> None:
    script = 'mkdir -p /app/state && echo "$1" > /app/state/"$1"'
    assert provider.exec(sandbox, ["/bin/sh", "-c", script, "sh", name], 10).exit_code == 0


def files(provider, sandbox) -> bytes:
    lifecycle.readiness_check(provider, sandbox)
    return provider.exec(sandbox, LIST, 10).stdout


def demo_run(monkeypatch, slug: str, leftovers, *options: str) -> tuple[list, dict, str]:
    """`bench run --demo` of both copy benchmarks, 3 trials: the run's trials as (outcome,
    cause), what `leftovers(fake)` found in the fake as it stopped, and the command's output."""
    left: dict = {}
    original = demo.fake_class

    def watched_fake(name):
        class Watched(original(name)):
            def __init__(self, root, **options):
                super().__init__(root, **options)
                # What is checked here is the copies, not the creation rate: two trials' creates
                # the chain spaced 1 s apart reach E2B's fake (1 a second) less than 0.5 s apart
                # on a loaded two-core host, and are refused (test_burst.py covers the rate).
                self.backend.create_window = None

            def stop(self):
                # What the run left behind, before the fake's own stop clears it away.
                left.update(leftovers(self))
                super().stop()

        return Watched

    monkeypatch.setattr(demo, "fake_class", watched_fake)
    monkeypatch.setattr(chain, "lifecycle_limits", LIMITS)
    out = io.StringIO()
    benchmarks = "snapshot-restore,fork"
    arguments = ["--provider", slug, "--benchmark", benchmarks, "--trials", "3", *options]
    call_command("bench", "run", "--demo", *arguments, "--inline", stdout=out)
    run = Run.objects.get()
    assert run.status == "completed"
    trials = [(t.outcome, t.cause) for t in Trial.objects.filter(run=run)]
    return trials, left, out.getvalue()


@contextlib.contextmanager
def cleaned_up(slug: str, root):
    """In a demo session of `slug`: a snapshot of the batch `bb-left` and one of a label not
    boxbench's, their source destroyed, then `bench cleanup --max-age 0`. Yields (provider,
    fake, the bb-left snapshot, the other one, the command's output)."""
    from runner.providers import get_provider

    with demo.demo_session([slug], root=str(root)) as fakes:
        provider = get_provider(slug)
        source = ready(provider, dataclasses.replace(SPEC, label="bb-left"))
        left = provider.snapshot(source)
        kept = provider.snapshot(dataclasses.replace(source, label="someone-else"))
        provider.destroy(source)
        out = io.StringIO()
        call_command("bench", "cleanup", "--provider", slug, "--max-age", "0", stdout=out)
        assert f"removed {slug} {left} label=bb-left" in out.getvalue()
        yield provider, fakes[slug], left, kept


def restored_copy(provider):
    """(source, snapshot id, restored sandbox): a file written before the snapshot, another
    after it and before the restore; the restored sandbox holds only the first."""
    source = ready(provider)
    write(provider, source, "before")
    snapshot_id = provider.snapshot(source)
    write(provider, source, "after")
    restored = provider.restore(snapshot_id, SPEC)
    assert files(provider, restored) == b"before\n"
    assert restored.facts["restored_from"] == snapshot_id
    return source, snapshot_id, restored


def forked_copy(provider):
    """(source, fork): a file written before the fork, another after it; the fork holds only
    the first, the source (still running) both."""
    source = ready(provider)
    write(provider, source, "before")
    copy = provider.fork(source, SPEC)
    write(provider, source, "after")
    assert files(provider, copy) == b"before\n"
    assert files(provider, source) == b"after\nbefore\n"
    assert copy.facts["forked_from"] == source.id and copy.made_snapshots == []
    return source, copy
