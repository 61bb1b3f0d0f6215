"""A command in a real `local` sandbox cannot pass a trailer of its own off as the guest clock's:
each forgery ends the trial as the benchmark's fault, never as a stepped clock charged to the
provider, and no program the command starts finds the call's key."""

import pytest

from runner import clock
from runner.lifecycle import run_trial
from tests.support import clock_attacks
from tests.support.runner import DEFINITION, FAST, UNIT

FORGERIES = clock_attacks.forgeries()
# A background command's output is read once its exit code is written: a line printed after that
# never reaches the runner, so that attack is run synchronously only.
LATE = "a background child that prints one last"


def _trial(local, command: str, background: bool, runs: list | None = None):
    def procedure(ctx):
        run = ctx.background(command, 60) if background else ctx.guest(command, timeout=60)
        if runs is not None:
            runs.append(run)
        ctx.record(DEFINITION.metric, run.runtime_ms)

    return run_trial(local, DEFINITION, UNIT, procedure, label="bb-t", limits=FAST)


CASES = [
    pytest.param(
        attack, command, background, id=f"{attack}-{'background' if background else 'guest'}"
    )
    for background in (False, True)
    for attack, command in FORGERIES
    if not (background and attack.startswith(LATE))
]


@pytest.mark.parametrize(("attack", "command", "background"), CASES)
def test_a_forged_trailer_is_the_benchmarks_fault_never_a_stepped_clock(
    local, attack, command, background
):
    result = _trial(local, command, background)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark"), result.cause
    assert "__SANDBOX_CLOCK line of its own" in result.cause
    assert not any(e.kind in ("clock_gate", "killed_by_signal") for e in result.evidence)
    assert result.cleanup_verified and local.list_sandboxes() == []


@pytest.mark.parametrize("background", [False, True], ids=["guest", "background"])
def test_no_process_in_the_sandbox_finds_the_calls_key(local, monkeypatch, background):
    keys: list[str] = []
    real_key = clock.new_key

    def recorded_key() -> str:
        keys.append(real_key())
        return keys[-1]

    monkeypatch.setattr(clock, "new_key", recorded_key)
    runs: list = []
    result = _trial(local, clock_attacks.probe_command(everything=True), background, runs)
    assert result.outcome == "success", result.cause
    (run,) = runs
    assert b"__bb_clock_end" in run.stdout  # it read the wrapper's own command line
    assert len(keys) == 1 and keys[0].encode() not in run.stdout


@pytest.mark.parametrize("background", [False, True], ids=["guest", "background"])
@pytest.mark.parametrize("command", ["exec true", "exec sh -c 'exit 3'"])
def test_a_command_that_replaces_the_wrappers_shell_is_the_benchmarks_fault(
    local, command, background
):
    """No trailer although the command exited by itself: the command ended the wrapper (a
    hostile unit could otherwise charge the provider with a failure at will)."""
    result = _trial(local, command, background)
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark"), result.cause
    assert "replaced or ended the clock wrapper's shell" in result.cause
    assert result.cleanup_verified and local.list_sandboxes() == []
