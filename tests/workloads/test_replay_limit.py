"""The replay's per-command limit (spec: deepswe.txt, "Measurement" step 4), run by host bash.

The limit is shortened to 1 s; KILL still follows TERM after the spec's 5 s.
"""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from runner.traces import replay
from runner.traces.format import TRACES_DIR, Command, load_trace
from runner.traces.record import HostDirectory

SIX = TRACES_DIR / "six-ensure-bytearray" / "trace.json"
# Prints the pids of itself and of a background child in its process group, then waits.
PARENT_AND_CHILD = "{trap}sleep 60 & echo child $!; echo self $$; sleep 60"


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(replay, "MIN_LIMIT_S", 1)


def _run(commands, recording=True):
    trace = replace(load_trace(SIX), commands=tuple(commands))
    directory = HostDirectory()
    try:
        run = directory.run(trace, recording=recording)
    finally:
        directory.close()
    return run, run.parsed()


def _pids(output):
    return [int(pid) for pid in re.findall(r"^(?:child|self) (\d+)$", output, re.MULTILINE)]


def _alive(pid):
    """Running or sleeping; a zombie (killed, not yet reaped by whoever adopted it) is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_it_keeps_a_normal_commands_exit_code_and_output_with_stdin_empty():
    run, records = _run([Command("echo out; echo err >&2; cat; exit 3", 3, 0.0)])
    assert [c.exit_code for c in records.commands] == [3]
    assert run.output == "out\nerr\n"
    assert records.done


def test_it_stops_a_command_over_its_limit_with_its_children_and_records_124(short_limit):
    run, records = _run([Command(PARENT_AND_CHILD.format(trap=""), 0, 0.0)], recording=False)
    pids = _pids(run.output)
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
    assert records.mismatch == (0, replay.TIMEOUT_EXIT, 0)
    assert records.commands[0].wall_ms >= 1000
    verdict = replay.judge(load_trace(SIX), records)
    assert (verdict.outcome, verdict.timed_out) == ("excluded", True)


def test_it_kills_a_group_that_ignores_term_after_the_limit_plus_five_seconds(short_limit):
    run, records = _run(
        [
            Command(PARENT_AND_CHILD.format(trap="trap '' TERM; "), 0, 0.0),
            Command("echo next", 0, 0.0),
        ]
    )
    pids = _pids(run.output)
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
    assert [c.exit_code for c in records.commands] == [replay.TIMEOUT_EXIT, 0]
    assert records.commands[0].wall_ms >= (1 + replay.KILL_AFTER_S) * 1000
    assert run.output.endswith("next\n") and records.done


def test_it_leaves_no_watchdog_or_proxy_behind():
    # The script's children while a command runs: the deny proxy, the watchdog, the command.
    run, records = _run([Command("cat /proc/$PPID/task/*/children", 0, 0.0)])
    children = [int(pid) for pid in run.output.split()]
    assert records.done and len(children) == 3
    assert not any(_alive(pid) for pid in children)
