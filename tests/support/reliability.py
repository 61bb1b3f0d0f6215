"""What the reliability tests share: a small planned run, trials claimed as if a worker had
started them, waiting for a condition, and reading /metrics back."""

import contextlib
import json
import os
import secrets
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings as django_settings
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from boxbench.models import Evidence, Outcome, Trial, TrialState
from runner import recovery, store
from runner.plan import plan_run


def queue_secret_key(monkeypatch) -> str:
    """A served-grade key that this process and the qclusters it starts both sign tasks with.

    A qcluster refuses the development key with DEBUG off, and django-q2 reads the key once, at
    import: the test process's settings may still hold the default (the suite's random key is set
    after Django's settings load), so the queue's copy is replaced too."""
    from django_q.conf import Conf

    key = secrets.token_urlsafe(48)
    monkeypatch.setattr(Conf, "SECRET_KEY", key)
    monkeypatch.setattr(django_settings, "SECRET_KEY", key)
    return key


def plan(benchmark="create", trials=2):
    run = plan_run(
        "chaos", benchmarks=[benchmark], providers=["local"], trials=trials, seed=1, concurrency=1
    )
    return run


def claim(trial, minutes_ago: float, beat_s_ago: float | None = None):
    """Claim a trial as started `minutes_ago`, its last heartbeat `beat_s_ago` (default: none
    since it started)."""
    assert store.claim_trial(trial.pk, django_settings.JOB_HOST)
    now = timezone.now()
    started = now - timedelta(minutes=minutes_ago)
    beat = started if beat_s_ago is None else now - timedelta(seconds=beat_s_ago)
    Trial.objects.filter(pk=trial.pk).update(started_at=started, heartbeat_at=beat)


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s:g} s")
        time.sleep(0.05)
    return found


def tool_running(provider, command: str) -> bool:
    """True once `command` runs inside one of the provider's sandboxes (its PID namespace)."""
    namespaces = set()
    for sandbox in provider.list_sandboxes():
        try:
            meta = json.loads((provider.root / sandbox.id / "sandbox.json").read_text())
        except FileNotFoundError:
            continue  # still being created: its metadata (written atomically) comes later
        if meta.get("pid"):
            with contextlib.suppress(OSError):
                namespaces.add(os.readlink(f"/proc/{meta['pid']}/ns/pid"))
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            named = (proc / "comm").read_text().strip() == command
            if named and os.readlink(proc / "ns" / "pid") in namespaces:
                return True
    return False


def assert_recovered(trial_id):
    trial = Trial.objects.get(pk=trial_id)
    assert trial.state == TrialState.DONE and trial.outcome == Outcome.PROVIDER_FAILURE
    assert trial.owner == "unknown" and trial.cause == recovery.CAUSE
    assert trial.cut_short
    lifecycle = Evidence.objects.get(trial=trial, kind="lifecycle").data
    return trial, lifecycle


def parse(text: str) -> dict:
    """{(family, labels as sorted tuples): value}, read by the reference parser."""
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples
