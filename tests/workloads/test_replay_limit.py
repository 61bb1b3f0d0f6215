"""The replay's per-command limit (spec: deepswe.txt, "Measurement" step 4), run by host bash.

The limit is `timeout --kill-after=5s LIMIT` around each command, inside its measured span. The
limit is shortened to 1 s (2 s where a command must finish under it); KILL still follows TERM
after the spec's 5 s.
"""

import re
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from runner.traces import record, replay
from runner.traces.format import TRACES_DIR, Command, load_trace
from runner.traces.record import HostDirectory

SIX = TRACES_DIR / "six-ensure-bytearray" / "trace.json"
# Prints the pids of itself and of a background child in its process group, then waits.
PARENT_AND_CHILD = "{trap}sleep 60 & echo child $!; echo self $$; sleep 60"
# Prints its own first and last clock readings, and the program and arguments of its parent.
SELF_TIMED = (
    'echo "start $EPOCHREALTIME"; '
    'echo "parent $(head -z -n 3 /proc/$PPID/cmdline | tr "\\0\\n" "  ")"; '
    'echo "end $EPOCHREALTIME"'
)


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(replay, "MIN_LIMIT_S", 1)


def _run(commands, recording=True, limit=True):
    trace = replace(load_trace(SIX), commands=tuple(commands))
    directory = HostDirectory()
    try:
        run = directory.run(trace, recording=recording, limit=limit)
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
    assert records.done and records.timeout is None


def test_it_stops_a_command_over_its_limit_with_its_children_and_records_124(short_limit):
    run, records = _run([Command(PARENT_AND_CHILD.format(trap=""), 0, 0.0)], recording=False)
    pids = _pids(run.output)
    assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
    assert records.timeout == replay.CommandTimeout(0, 1, replay.TIMEOUT_EXIT)
    assert [c.exit_code for c in records.commands] == [replay.TIMEOUT_EXIT]
    assert records.commands[0].wall_ms >= 1000
    assert run.exit_code == 3 and not records.done  # the first failed step ends the replay
    verdict = replay.judge(load_trace(SIX), records)
    assert (verdict.outcome, verdict.timed_out) == ("excluded", True)
    assert verdict.cause.startswith("command 0 timed out: its limit of 1 s passed")


def test_a_timeout_ends_the_replay_even_where_the_trace_recorded_exit_124(short_limit):
    run, records = _run([Command("sleep 60", 124, 0.0), Command("echo next", 0, 0.0)], False)
    assert records.timeout == replay.CommandTimeout(0, 1, replay.TIMEOUT_EXIT)
    assert len(records.commands) == 1 and "next" not in run.output


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
    assert records.timeout == replay.CommandTimeout(0, 1, replay.TIMEOUT_KILLED)
    assert records.commands[0].wall_ms >= (1 + replay.KILL_AFTER_S) * 1000
    assert run.output.endswith("next\n") and records.done


def test_a_command_that_finishes_just_under_its_limit_keeps_its_exit_code_and_time(
    monkeypatch,
):
    monkeypatch.setattr(replay, "MIN_LIMIT_S", 2)
    run, records = _run([Command("sleep 1.5; echo finished; exit 3", 3, 0.0)])
    assert records.timeout is None and records.done
    assert [c.exit_code for c in records.commands] == [3]
    assert run.output == "finished\n"
    assert records.commands[0].wall_ms >= 1500


@pytest.mark.parametrize("own_exit", ["exit 124", "kill -KILL $$"])
def test_a_command_that_ends_124_or_137_before_its_limit_did_not_time_out(own_exit):
    run, records = _run([Command(own_exit, 0, 0.0)], recording=False)
    assert records.timeout is None
    assert records.mismatch == (0, 124 if own_exit == "exit 124" else 137, 0)
    verdict = replay.judge(load_trace(SIX), records)
    assert (verdict.outcome, verdict.timed_out) == ("excluded", False)


@pytest.mark.parametrize("limit", [True, False])
def test_the_measured_span_holds_the_whole_command_and_timeout_is_its_only_addition(limit):
    # Ordering, not durations: the command's own first and last readings fall inside the span
    # the replay records, with the limit and without it (the same trace, the reference).
    run, records = _run([Command(SELF_TIMED, 0, 0.0)] * 3, limit=limit)
    starts = [Decimal(v) for v in re.findall(r"^start (\S+)$", run.output, re.MULTILINE)]
    ends = [Decimal(v) for v in re.findall(r"^end (\S+)$", run.output, re.MULTILINE)]
    spans = [
        (Decimal(p[3]), Decimal(p[4]))
        for p in (line.split() for line in run.records.splitlines())
        if p[0] == "__CMD"
    ]
    assert len(starts) == len(ends) == len(spans) == 3
    for (w0, w1), start, end in zip(spans, starts, ends, strict=True):
        assert w0 <= start <= end <= w1
    # Between the readings runs the spec's `timeout --kill-after=5s LIMIT` and nothing else of
    # the limit: it is the command's parent, or, without the limit, the replay script is.
    parents = re.findall(r"^parent (.*)$", run.output, re.MULTILINE)
    expected = "timeout --kill-after=5s 180s " if limit else f"{replay.STATE_DIR}/bash -c "
    assert len(parents) == 3 and all(p.startswith(expected) for p in parents)
    assert records.done


def test_it_leaves_no_timeout_or_proxy_behind():
    # The script's children while a command runs: the deny proxy, the sealer and the command's
    # `timeout`.
    script = 'cat /proc/$(cut -d " " -f 4 /proc/$PPID/stat)/task/*/children'
    run, records = _run([Command(script, 0, 0.0)])
    children = [int(pid) for pid in run.output.split()]
    assert records.done and len(children) == 3
    assert not any(_alive(pid) for pid in children)


def test_it_ends_a_deny_proxy_that_a_command_stopped():
    # A hostile command stops the proxy: a TERM would stay pending and the proxy outlive the
    # replay (as a proxy not yet run again after its TERM did on a busy host); it is killed and
    # waited for.
    script = (
        'for pid in $(cat /proc/$(cut -d " " -f 4 /proc/$PPID/stat)/task/*/children); do '
        "grep -q 'deny[p]roxy' /proc/$pid/cmdline && kill -STOP $pid && echo $pid; done; true"
    )
    run, records = _run([Command(script, 0, 0.0)])
    [proxy] = [int(pid) for pid in run.output.split()]
    assert records.done and not _alive(proxy)


def test_a_sandbox_without_a_working_timeout_is_a_benchmark_error(tmp_path, monkeypatch):
    fake = tmp_path / "timeout"
    fake.write_text("#!/bin/sh\necho 'timeout: unrecognized option' >&2\nexit 125\n")
    fake.chmod(0o755)
    monkeypatch.setattr(record, "HOST_PATH", f"{tmp_path}:{record.HOST_PATH}")
    run, records = _run([Command("echo never", 0, 0.0)], recording=False)
    assert records.setup_error.startswith("the per-command limit needs timeout --kill-after=5s")
    assert not records.commands and "never" not in run.output
    verdict = replay.judge(load_trace(SIX), records)
    assert verdict.outcome == "benchmark_error"
