import subprocess

import pytest

from runner import clock


def run_wrapped(command):
    done = subprocess.run(["bash", "-c", clock.wrap(command)], capture_output=True, timeout=10)
    return done.returncode, done.stdout, *clock.parse_trailer(done.stderr)


def test_it_times_a_builtin_without_a_subprocess_and_keeps_stderr_clean():
    code, stdout, stderr, timing = run_wrapped("echo out; echo err >&2")
    assert (code, stdout, stderr) == (0, b"out\n", b"err\n")
    assert 0 <= timing.wall_ms < 50
    assert timing.gate_ok


def test_it_reports_timing_and_the_exit_code_when_the_command_exits():
    code, _, _, timing = run_wrapped("sleep 0.05; exit 7")
    assert code == 7
    assert 45 <= timing.wall_ms < 1000


def test_it_reads_proc_uptime_with_read_N_and_no_subprocess():
    script = clock.wrap("true")
    assert "read -r -N 64" in script and "$EPOCHREALTIME" in script
    assert "$(" not in script and "`" not in script


def test_it_finds_no_timing_without_a_trailer():
    assert clock.parse_trailer(b"plain error\n") == (b"plain error\n", None)


def test_it_takes_only_the_last_line_as_the_trailer():
    stderr = b"__SANDBOX_CLOCK fake\nreal\n__SANDBOX_CLOCK 10.000000 10.500000 5.00 5.50\n"
    clean, timing = clock.parse_trailer(stderr)
    assert clean == b"__SANDBOX_CLOCK fake\nreal"
    assert timing.wall_ms == pytest.approx(500) and timing.uptime_ms == pytest.approx(500)


@pytest.mark.parametrize(
    ("wall", "uptime", "ok"),
    [(5, 0, True), (20, 0, True), (20.001, 0, False), (-0.001, 0, False), (0, -10, False)],
)
def test_it_gates_on_both_spans_agreeing_within_20_ms(wall, uptime, ok):
    assert clock.gate(wall, uptime) is ok


def test_it_refuses_an_empty_command():
    with pytest.raises(ValueError, match="needs a command"):
        clock.wrap("  ")


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("set -e; echo hi", 0),
        ("set -euo pipefail; echo hi", 0),
        ("set -e; false; echo never", 1),
        ("set -e; exit 5", 5),
    ],
)
def test_it_writes_its_trailer_and_keeps_the_exit_code_under_errexit(command, code):
    done = subprocess.run(["bash", "-c", clock.wrap(command)], capture_output=True, timeout=10)
    _, timing = clock.parse_trailer(done.stderr)
    assert done.returncode == code
    assert timing is not None and timing.gate_ok
    assert b"never" not in done.stdout
