import contextlib
import itertools
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from runner import clock
from tests.support import clock_attacks
from tests.support.reliability import wait_for

KEY = "0123456789abcdef" * 2


def run_bash(script: str, key: str = KEY, **kwargs) -> subprocess.CompletedProcess:
    """`bash -c script` on the host as an adapter runs it, with the call's key on its stdin."""
    return subprocess.run(
        ["bash", "-c", script], input=clock.key_input(key), capture_output=True, **kwargs
    )


def run_wrapped(command):
    done = run_bash(clock.wrap(command), timeout=10)
    return done.returncode, done.stdout, *clock.parse_trailer(done.stderr, KEY)


def test_it_times_a_builtin_without_a_subprocess_and_keeps_stderr_clean():
    code, stdout, stderr, timing = run_wrapped("echo out; echo err >&2")
    assert (code, stdout, stderr) == (0, b"out\n", b"err\n")
    assert 0 <= timing.wall_ms < 50
    assert timing.gate_ok


def test_it_reports_timing_and_the_exit_code_when_the_command_exits():
    code, _, _, timing = run_wrapped("sleep 0.05; exit 7")
    assert code == 7
    assert 45 <= timing.wall_ms < 1000


def test_it_reads_proc_uptime_with_read_n_and_no_subprocess():
    script = clock.wrap("true")
    assert "read -r -N 64" in script and "$EPOCHREALTIME" in script
    assert "$(" not in script and "`" not in script


def test_it_finds_no_timing_without_a_trailer():
    assert clock.parse_trailer(b"plain error\n", KEY) == (b"plain error\n", None)


FORGED = "printf '\\n__SANDBOX_CLOCK 10.000000 90.000000 5.00 5.10\\n' >&2"


@pytest.mark.parametrize("then", ["true", "exec 2> /dev/null", "exec 2>&-"])
def test_a_trailer_the_command_writes_is_refused_even_when_it_drops_its_stderr(then):
    # The wrapper's own trailer goes to a copy of stderr taken before the command, so the
    # forged line (which would fail the clock gate) is never the last one.
    done = run_bash(clock.wrap(f"{FORGED}; {then}"), timeout=10)
    assert done.stderr.count(b"__SANDBOX_CLOCK") == 2
    with pytest.raises(clock.ExtraTrailer, match="of its own"):
        clock.parse_trailer(done.stderr, KEY)


def test_it_takes_only_the_line_with_the_calls_key_as_the_trailer():
    stderr = b"__SANDBOX_CLOCK fake\nreal\n__SANDBOX_CLOCK " + KEY.encode()
    stderr += b" 10.000000 10.500000 5.00 5.50\n"
    clean, timing = clock.parse_trailer(stderr, KEY)
    assert clean == b"__SANDBOX_CLOCK fake\nreal"
    assert timing.wall_ms == pytest.approx(500) and timing.uptime_ms == pytest.approx(500)


@pytest.mark.parametrize(("attack", "command"), clock_attacks.forgeries())
def test_a_trailer_a_command_forges_is_refused_whether_or_not_the_wrappers_is_there(
    attack, command
):
    # Before the call's key, the forged line of `exec prog` or `kill -9 $$` was the only trailer
    # and so taken as the guest clock's: a stepped clock charged to the provider.
    done = run_bash(clock.wrap(command), timeout=30)
    assert b"__SANDBOX_CLOCK" in done.stderr, attack
    with pytest.raises(clock.ExtraTrailer, match="without this call's key"):
        clock.parse_trailer(done.stderr, KEY)


def test_a_command_that_repeats_the_wrappers_own_line_is_refused():
    # Only code written against the wrapper can know the key (a builtin reading its variable).
    done = run_bash(clock.wrap("printf '\\n__SANDBOX_CLOCK %s 1.0 2.0 3.00 4.00\\n' $__bb_key >&2"))
    with pytest.raises(clock.ExtraTrailer, match="repeated the wrapper's"):
        clock.parse_trailer(done.stderr, KEY)


def test_a_trailer_without_the_key_is_refused_when_the_key_never_arrived():
    # An adapter that drops stdin: the wrapper's trailer has no key, and is no one's clock.
    done = run_bash(clock.wrap("true"), key="")
    with pytest.raises(clock.ExtraTrailer):
        clock.parse_trailer(done.stderr, KEY)


def test_the_commands_output_after_the_wrappers_trailer_is_kept():
    code, _, stderr, timing = run_wrapped("( sleep 0.2; echo late >&2 ) &")
    assert (code, stderr) == (0, b"late\n") and timing is not None


def test_no_program_the_command_starts_finds_the_key_in_argv_environment_or_files():
    done = run_bash(clock.wrap(clock_attacks.probe_command()), timeout=30)
    _, timing = clock.parse_trailer(done.stderr, KEY)
    assert timing is not None and done.returncode == 0, done.stderr
    assert b"__bb_clock_end" in done.stdout  # it did read the wrapper's command line
    assert KEY.encode() not in done.stdout


def test_a_background_command_gets_the_key_and_shows_it_to_no_program(tag):
    launch = run_bash(clock.background_script(clock_attacks.probe_command(), tag), timeout=60)
    assert launch.returncode == 0
    paths = clock.background_paths(tag)
    wait_for(lambda: Path(paths["rc"]).exists(), 60, "the background command to finish")
    _, timing = clock.parse_trailer(Path(paths["err"]).read_bytes(), KEY)
    out = Path(paths["out"]).read_bytes()
    assert timing is not None and b"__bb_clock_end" in out and KEY.encode() not in out


def test_the_wrapper_reads_the_key_from_a_file_it_empties_before_the_command(tmp_path):
    # Adapters whose stdin is an uploaded file get the key as a file named by the wrapper's $0:
    # the command (its $0 too) finds the file empty.
    path = Path(clock.key_file())
    path.write_bytes(clock.key_input(KEY))
    try:
        script = clock.wrap('/bin/cat "$0"; echo "[$0]"')
        done = subprocess.run(
            ["bash", "-c", script, str(path)], stdin=subprocess.DEVNULL, capture_output=True
        )
        _, timing = clock.parse_trailer(done.stderr, KEY)
        assert timing is not None and done.stdout == f"[{path}]\n".encode()
        assert path.read_bytes() == b""
    finally:
        path.unlink()


@pytest.mark.parametrize("key", ["", "ABCDEF0123456789" * 2, "0" * 31])
def test_it_refuses_a_key_it_did_not_make(key):
    with pytest.raises(ValueError, match="32 lowercase hex digits"):
        clock.parse_trailer(b"", key)


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
    done = run_bash(clock.wrap(command), timeout=10)
    _, timing = clock.parse_trailer(done.stderr, KEY)
    assert done.returncode == code
    assert timing is not None and timing.gate_ok
    assert b"never" not in done.stdout


def serve_uptime(path, readings, stop):
    """Answer each read of `path` with the next (uptime text, seconds held open before EOF);
    once they run out, the last text at once. Holding the FIFO open keeps the wrapper's `read`
    waiting after it has the value: a shell paused between its uptime and wall readings.

    `path` is a symlink to one FIFO per read, moved to the next FIFO before the current read
    ends, so each read meets exactly one writer (one shared FIFO lets a writer open against a
    reader that is just closing, and the next read can then find EOF and no value)."""

    def fifo(k):
        target = path.parent / f"uptime-{k}"
        os.mkfifo(target)
        os.symlink(target, path.parent / "next")
        os.replace(path.parent / "next", path)
        return target

    def serve():
        queue = list(readings)
        fd = os.open(fifo(0), os.O_WRONLY)
        for k in itertools.count(1):
            if stop.is_set():
                os.close(fd)
                return
            text, hold = queue.pop(0) if queue else (readings[-1][0], 0.0)
            os.write(fd, text.encode())
            time.sleep(hold)
            following = fifo(k)
            os.close(fd)  # the read ends; the wrapper's next read opens `following`
            fd = os.open(following, os.O_WRONLY)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def run_with_uptime(tmp_path, readings, command="true"):
    path = tmp_path / "uptime"
    stop = threading.Event()
    server = serve_uptime(path, readings, stop)
    while not path.exists():
        time.sleep(0.001)
    done = run_bash(clock.wrap(command, uptime=str(path)), timeout=60)
    stop.set()
    # Free the server's waiting open of its next FIFO. It may not have reached that open yet
    # (a loaded machine), and a reader gone before it opens frees nothing: repeat until it ends.
    deadline = time.monotonic() + 30
    while server.is_alive() and time.monotonic() < deadline:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        server.join(timeout=0.05)
    assert not server.is_alive(), "the uptime server did not stop"
    return clock.parse_trailer(done.stderr, KEY)[1]


def test_it_retakes_a_reading_paused_between_uptime_and_wall_clock(tmp_path):
    # First try: the uptime value is taken, then the shell stalls 120 ms before the wall reading.
    # Kept unpaired (as the wrapper once did), the no-op would show 120 ms on /proc/uptime and
    # under 1 ms on $EPOCHREALTIME, failing the gate as a stepped clock that never stepped.
    timing = run_with_uptime(tmp_path, [("100.00 5.00\n", 0.12), ("100.12 5.00\n", 0.0)])
    # Retaken: both uptime readings are 100.12, not 100.00 and 100.12. (The wall span is the
    # no-op's and not asserted: a loaded machine can pause the shell inside it as well.)
    assert timing.uptime_ms == 0.0


def test_it_gives_up_after_five_paused_tries_at_each_end_and_still_reports(tmp_path):
    started = time.monotonic()
    timing = run_with_uptime(tmp_path, [("100.00 5.00\n", 0.02)] * 40)  # every read stalls
    assert time.monotonic() - started >= 10 * 0.02  # five tries at the start, five at the end
    assert timing is not None and timing.uptime_ms == 0.0


def test_it_takes_the_uptime_reads_outside_the_timed_span():
    script = clock.wrap("true")
    start = script.splitlines()[-2]  # the start's loop, just before the command
    # At the start the wall reading follows the uptime read; at the end it precedes it.
    assert start.index("< '/proc/uptime'") < start.index("__bb_w0=$EPOCHREALTIME")
    end = script.splitlines()[0]
    assert end.index("__bb_w1=$EPOCHREALTIME") < end.index("< '/proc/uptime'")


def fake_setsid(directory: Path, body: str) -> dict:
    """An environment whose `setsid` runs `body` (sh) first, then the real one if it gets there."""
    directory.mkdir()
    (directory / "setsid").write_text(f'#!/bin/sh\n{body}\nexec /usr/bin/setsid "$@"\n')
    (directory / "setsid").chmod(0o755)
    return {**os.environ, "PATH": f"{directory}:{os.environ['PATH']}"}


@pytest.fixture
def tag():
    tag = f"test-{os.getpid()}-{time.monotonic_ns()}"
    yield tag
    for path in Path("/tmp").glob(f".boxbench-bg-{tag}*"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def launch_and_poll(tag: str, env: dict):
    launch = ["bash", "-c", clock.background_script("echo done", tag)]
    assert run_bash(launch[2], env=env, timeout=60).returncode == 0
    return lambda wait_s: subprocess.run(clock.poll_command(tag, wait_s), timeout=60).returncode


def test_a_poll_waits_for_a_background_command_that_is_slow_to_start(tmp_path, tag):
    """On a busy host the background shell can start after the first poll has waited: that
    poll must say "still running" (1), not "gone" (2), which ended live trials. Here `setsid`
    waits for a file before it starts the command."""
    release = tmp_path / "release"
    env = fake_setsid(tmp_path / "bin", f"while [ ! -e {release} ]; do sleep 0.01; done")
    try:
        poll = launch_and_poll(tag, env)
        assert poll(0) == 1  # launched, not started yet: still running
        release.touch()
        deadline = time.monotonic() + 60
        while (code := poll(1)) == 1:
            assert time.monotonic() < deadline, "the released command never finished"
        assert code == 0
        assert Path(clock.background_paths(tag)["out"]).read_text() == "done\n"
    finally:
        release.touch()


def test_a_poll_says_gone_at_once_when_the_launched_process_died_before_the_command(tmp_path, tag):
    """An engine that ends the exec's session as the call returns can take the launched
    process with it before it runs anything: the first poll says so (2)."""
    poll = launch_and_poll(tag, fake_setsid(tmp_path / "bin", "exit 0"))
    # On a busy host the launched process can still be alive (about to exit) at the first poll,
    # which then rightly says "still running": the first poll after its death says "gone".
    pid = Path(clock.background_paths(tag)["pid"]).read_text().strip()
    wait_for(lambda: process_ended(pid), 60, f"launched process {pid} to end")
    assert poll(0) == 2


def process_ended(pid: str) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state.startswith(("Z", "X"))
