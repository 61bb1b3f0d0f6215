"""Whose fault: a command killed from outside the benchmark is the provider's failure; only the
benchmark's own defects stop its unit (runner/fault.py, docs/runner.md "Whose fault")."""

import dataclasses
import errno
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from boxbench.models import Outcome, RunStatus, TrialState
from runner import fault, steps
from runner.benchmarks.base import BenchmarkError
from runner.plan import plan_run
from tests.support.runner import DEFINITION, trial


@pytest.mark.parametrize(
    ("exit_code", "expected"),
    [
        (137, signal.SIGKILL),
        (-9, signal.SIGKILL),
        (143, signal.SIGTERM),
        (139, signal.SIGSEGV),
        (0, None),
        (1, None),
        (127, None),
        (128, None),
        (255, None),
    ],
)
def test_it_reads_the_signal_from_an_exit_status(exit_code, expected):
    assert fault.signal_of(exit_code) == expected


def test_a_kill_or_the_oom_killer_is_from_outside_unless_the_benchmark_sends_it():
    assert "SIGKILL (exit status 137)" in fault.killed_from_outside(137)
    assert "OOM killer" in fault.killed_from_outside(-9)
    assert "did not send" in fault.killed_from_outside(143)
    assert fault.killed_from_outside(143, sent=(signal.SIGTERM,)) is None
    assert fault.killed_from_outside(139) is None  # a segfault is the program's own
    assert fault.killed_from_outside(134) is None  # so is abort()
    assert fault.killed_from_outside(2) is None


def test_a_job_host_out_of_resources_is_not_a_defect_of_the_benchmark():
    assert "memory" in fault.host_failure(MemoryError())
    assert "resource" in fault.host_failure(OSError(errno.EMFILE, "Too many open files"))
    assert "thread" in fault.host_failure(RuntimeError("can't start new thread"))
    assert fault.host_failure(KeyError("field")) is None
    assert fault.host_failure(OSError(errno.ENOENT, "No such file")) is None
    assert fault.stops_unit("benchmark_error", "benchmark")
    assert fault.stops_unit("benchmark_error", "environment")  # every benchmark error stops it
    assert not fault.stops_unit("provider_failure", "provider")


def kill_from_outside(provider, command: str, sig=signal.SIGKILL, timeout_s: float = 30.0):
    """Kill `command` running in one of `provider`'s sandboxes from the job host, as an operator
    or the OOM killer would; returns a thread to join."""

    def find_and_kill():
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    cmdline = (proc / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if cmdline[:2] == [b"sleep", command.encode()]:
                    os.kill(int(proc.name), sig)
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=find_and_kill, daemon=True)
    thread.start()
    return thread


def test_a_command_killed_from_outside_the_sandbox_is_a_provider_failure(local):
    def sleeper(ctx):
        ctx.background("sleep 31.5", timeout=60)

    killer = kill_from_outside(local, "31.5")
    result = trial(local, sleeper)
    killer.join()
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert "SIGKILL (exit status 137)" in result.cause
    assert any(e.kind == "killed_by_signal" for e in result.evidence)


def test_a_synchronous_command_killed_from_outside_is_a_provider_failure(local):
    def sleeper(ctx):
        ctx.guest("sleep 32.5", timeout=60)

    killer = kill_from_outside(local, "32.5", signal.SIGTERM)
    result = trial(local, sleeper)
    killer.join()
    assert result.outcome == "provider_failure" and "SIGTERM" in result.cause


def test_a_signal_the_benchmark_sends_itself_stays_its_own(local):
    def stops_itself(ctx):
        run = ctx.guest("sleep 30 & pid=$!; kill -TERM $pid; wait $pid", timeout=20)
        if run.exit_code != 0:
            raise BenchmarkError(f"the tool exited {run.exit_code}")

    sends = dataclasses.replace(DEFINITION, sends_signals=(signal.SIGTERM,))
    result = trial(local, stops_itself, definition=sends)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "exited 143" in result.cause


def test_a_crashing_tool_is_a_benchmark_error(local):
    def crashes(ctx):
        run = ctx.guest("bash -c 'kill -SEGV $$'", timeout=20)
        raise BenchmarkError(f"the tool exited {run.exit_code}")

    result = trial(local, crashes)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "exited 139" in result.cause


def test_a_job_host_out_of_threads_is_not_the_benchmarks_fault(local):
    def no_threads(ctx):
        raise RuntimeError("can't start new thread")

    result = trial(local, no_threads)
    assert (result.outcome, result.owner) == ("benchmark_error", "environment")


@pytest.mark.django_db(transaction=True)
def test_a_kill_from_outside_is_refilled_and_never_stops_the_unit(chain_provider, monkeypatch):
    """The issue's case: one killed process ended the run `completed` with 0 of its trials."""
    from runner.benchmarks import create

    calls = {"n": 0}
    real = create.run

    def first_one_killed(ctx):
        calls["n"] += 1
        if calls["n"] == 1:
            killer = kill_from_outside(ctx.provider, "33.5")
            ctx.guest("sleep 33.5", timeout=60)
            killer.join()
        real(ctx)

    monkeypatch.setattr(create, "run", first_one_killed)
    run = plan_run(
        "fault", benchmarks=["create"], providers=["local"], trials=3, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    assert run.manifest["stopped_units"] == []
    killed = run.trials.get(outcome=Outcome.PROVIDER_FAILURE)
    assert "SIGKILL" in killed.cause
    assert run.trials.get(replaces=killed).outcome == Outcome.SUCCESS
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 3
    assert not run.trials.filter(state=TrialState.CANCELLED).exists()


@pytest.mark.django_db(transaction=True)
def test_a_job_host_failure_stops_the_unit_like_any_benchmark_error(chain_provider, monkeypatch):
    from runner.benchmarks import create

    calls = {"n": 0}
    real = create.run

    def first_one_out_of_files(ctx):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        real(ctx)

    monkeypatch.setattr(create, "run", first_one_out_of_files)
    run = plan_run(
        "fault", benchmarks=["create"], providers=["local"], trials=2, seed=1, concurrency=1
    )
    run.transition(RunStatus.RUNNING)
    steps.execute_chain(run.pk, "local")
    run.refresh_from_db()
    assert run.manifest["stopped_units"] == [["local", "create", "default"]]
    failed = run.trials.get(outcome=Outcome.BENCHMARK_ERROR)
    assert failed.owner == "environment"
    assert not run.trials.filter(replaces=failed).exists()  # never refilled
    assert run.trials.filter(outcome=Outcome.SUCCESS).count() == 0
    assert run.trials.filter(state=TrialState.CANCELLED).count() == 1  # the unit's other trial
