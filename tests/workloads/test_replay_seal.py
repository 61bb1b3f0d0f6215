"""A replayed command cannot forge the replay's times: the records are sealed with a key no
command can read, and a record changed, added, dropped or moved is a benchmark error (the
hostile commands run for real, by host bash; the lifecycle's handling is in
tests/workloads/test_replay_local.py)."""

import subprocess
from dataclasses import replace

import pytest

from runner.traces import replay
from runner.traces.format import TRACES_DIR, Command, load_trace
from runner.traces.record import HostDirectory

SIX = TRACES_DIR / "six-ensure-bytearray" / "trace.json"
KEY = "0123456789abcdef" * 4
GOOD = ["__PROXY 40000", "__CMD 0 0 1700000000.000000 1700000000.500000 10.00 10.50", "__DONE"]


def _run(commands):
    trace = replace(load_trace(SIX), commands=tuple(Command(c, 0, 0.0) for c in commands))
    directory = HostDirectory()
    try:
        return directory.run(trace, recording=True)
    finally:
        directory.close()


def test_bash_seals_each_record_as_the_runner_checks_it():
    script = (
        f"exec 3>&1; __bb_key={KEY}; __bb_seal={replay.FIRST_SEAL}\n"
        + replay._run_function()
        + "".join(f"__bb_put '{line}'\n" for line in GOOD)
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout == replay.seal_lines(KEY, GOOD)
    assert replay.parse_records(out.stdout, KEY).done


@pytest.mark.parametrize(
    "tamper",
    [
        lambda lines: [lines[0], lines[1].replace("0.500000", "0.000100", 1), lines[2]],
        lambda lines: [lines[0], lines[2]],  # a record dropped
        lambda lines: [lines[1], lines[0], lines[2]],  # two records swapped
        lambda lines: [*lines, lines[2]],  # a record added again
        lambda lines: [*lines[:2], "__DONE"],  # a record without its seal
    ],
    ids=["time-changed", "dropped", "swapped", "added", "unsealed"],
)
def test_a_changed_record_is_refused_not_read(tamper):
    sealed = replay.seal_lines(KEY, GOOD).splitlines()
    with pytest.raises(ValueError, match="seal does not match"):
        replay.parse_records("\n".join(tamper(sealed)) + "\n", KEY)


def test_records_sealed_with_another_key_are_refused():
    with pytest.raises(ValueError, match="line 1: its seal does not match"):
        replay.parse_records(replay.seal_lines("f" * 64, GOOD), KEY)


def test_a_command_that_rewrites_the_records_with_invented_times_is_caught():
    forged = replay.seal_lines("guessed", ["__CMD 0 0 1.0 1.0 1.0 1.0"])
    run = _run(["true", f"printf '%s' '{forged}' > {replay.RECORDS}"])
    assert "\n__CMD 1 0 " in run.records and "__DONE" in run.records  # the replay went on
    with pytest.raises(ValueError, match="line 1: its seal does not match"):
        run.parsed()


def test_a_lingering_process_that_rewrites_the_records_after_the_replay_is_caught():
    # It waits for __DONE, then shrinks every command's time and keeps the seals as they were.
    rewrite = (
        f"(while ! grep -q __DONE {replay.RECORDS}; do sleep 0.01; done; "
        f"sed -i 's/^__CMD \\([0-9]*\\) \\([0-9]*\\) \\([0-9.]*\\) [0-9.]*/__CMD \\1 \\2 \\3 \\3/' "
        f"{replay.RECORDS}; touch {replay.STATE_DIR}/rewritten) > /dev/null 2>&1 &"
    )
    directory = HostDirectory()
    try:
        trace = replace(load_trace(SIX), commands=(Command(rewrite, 0, 0.0), Command("true", 0, 0)))
        run = directory.run(trace, recording=True)
        rewritten = directory.workdir / replay.STATE_DIR / "rewritten"
        for _ in range(500):
            if rewritten.exists():
                break
            subprocess.run(["sleep", "0.01"], check=True)
        assert rewritten.exists()
        run.records = (directory.workdir / replay.RECORDS).read_text()
    finally:
        directory.close()
    with pytest.raises(ValueError, match="seal does not match"):
        run.parsed()


def test_no_command_can_read_the_key():
    run = _run(
        [
            f"cat {replay.KEY_FILE}; ls -a {replay.STATE_DIR}; env",
            "tr '\\0' ' ' < /proc/$PPID/cmdline; tr '\\0' ' ' < /proc/$PPID/environ",
        ]
    )
    assert "key: No such file" in run.output and "key" not in run.output.splitlines()
    assert run.key not in run.output
    records = run.parsed()
    assert records.done and [c.index for c in records.commands] == [0, 1]


def test_a_replay_without_its_key_writes_no_number():
    trace = replace(load_trace(SIX), commands=(Command("true", 0, 0.0),))
    directory = HostDirectory()
    try:
        directory.prepare(trace)
        script = replay.replay_script(trace, str(directory.workdir), recording=True)
        result = subprocess.run(["bash", "-c", script], cwd=directory.workdir, check=False)
        text = (directory.workdir / replay.RECORDS).read_text()
    finally:
        directory.close()
    assert result.returncode == replay.SETUP_FAILED
    assert text == "__SETUP the seal key cannot be read\n"
    with pytest.raises(ValueError, match="seal does not match"):
        replay.parse_records(text, KEY)
