"""A replayed command cannot forge the replay's times: the records are sealed with a key no
command can read, and a record changed, added, dropped or moved is a benchmark error (the
hostile commands run for real, by host bash; the lifecycle's handling is in
tests/workloads/test_replay_local.py)."""

import io
import shlex
import subprocess
import tarfile
from dataclasses import replace

import pytest

from runner.limits import Limits
from runner.pipelines.bundle import BundleError, make_bundle
from runner.readiness import ReadinessPolicy
from runner.traces import replay
from runner.traces.format import TRACES_DIR, Command, TraceError, check_members, load_trace
from runner.traces.guard import SAFE_GIT_EXPORT
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


def test_the_sealer_seals_each_record_as_the_runner_checks_it_and_removes_the_key(tmp_path):
    (tmp_path / replay.STATE_DIR).mkdir(parents=True)
    (tmp_path / replay.KEY_FILE).write_text(KEY)
    script = (
        replay._run_function()
        + f"exec 4>> {replay.OUTPUT_LOG}\n"
        + replay.sealer_start()
        + "\n"
        + "".join(f"__bb_put '{line}'\n" for line in GOOD)
        + "__bb_end 0\n"
    )
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True)
    records = (tmp_path / replay.RECORDS).read_text()
    assert records == replay.seal_lines(KEY, GOOD)
    assert replay.parse_records(records, KEY).done
    assert not (tmp_path / replay.KEY_FILE).exists()


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


# -- the same attacks in a real `local` sandbox, through the benchmark's own procedure -----------

# Run as the replay's first command: read the memory of every process it may open, look for a
# 64-hex-digit string that seals the records' first line (the key), and exit 1 if one does; 2 if
# it could read no other process at all (the route itself was closed, so the test proves nothing).
MEMORY_THIEF = r"""
import hashlib, os, re, sys
fields = open(".git/boxbench/records").readline().split()
record, seal = " ".join(fields[:-1]).encode(), fields[-1]
readable, found = 0, []
for pid in (p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        memory = open(f"/proc/{pid}/mem", "rb", buffering=0)
    except OSError:
        continue
    with memory:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            if "r" not in perms or end - start > 2**26:
                continue
            try:
                memory.seek(start)
                data = memory.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            readable += 1
            for candidate in set(re.findall(rb"[0-9a-f]{64}", data)):
                if hashlib.sha256(candidate + b" start " + record).hexdigest() == seal:
                    found.append(pid)
print("regions read:", readable, "key found in:", found)
sys.exit(1 if found else 0 if readable else 2)
"""


def _trial_with(local, monkeypatch, commands, prepare=None):
    from runner import lifecycle
    from runner.benchmarks import deepswe

    trace = load_trace(SIX)
    changed = replace(trace, commands=(*(Command(c, 0, 0.0) for c in commands), *trace.commands))
    monkeypatch.setattr(deepswe, "unit_trace", lambda ctx: changed)
    if prepare is not None:
        monkeypatch.setattr(deepswe, "prepare", prepare)
    unit = next(u for u in deepswe.units() if u.slug == "six-ensure-bytearray")
    limits = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.1, gone_timeout_s=5)
    return lifecycle.run_trial(
        local, deepswe.DEFINITION, unit, deepswe.run, label="test", pricing={}, limits=limits
    )


def test_a_command_that_reads_every_process_memory_finds_no_key_in_a_local_sandbox(
    local, monkeypatch
):
    result = _trial_with(local, monkeypatch, [f"python3 -I -c {shlex.quote(MEMORY_THIEF)}"])
    assert (result.outcome, result.cause) == ("success", "")


def test_a_process_the_preparation_leaves_behind_is_ended_before_the_key_goes_in(
    local, monkeypatch
):
    from runner.benchmarks import deepswe

    # A thief planted during the preparation (as a hook of a planted .git would be) copies the
    # key file whenever it exists; the first command fails if it lives on or got the key.
    real_prepare, planted = deepswe.prepare, []
    thief = f"while :; do cat {replay.WORKDIR}/{replay.KEY_FILE} >> /tmp/stolen 2> /dev/null; done"
    alive = "grep -qs boxbench-thie[f] /proc/[0-9]*/cmdline"

    def prepare_and_plant(ctx, trace):
        real_prepare(ctx, trace)
        named = f"exec -a boxbench-thief bash -c {shlex.quote(thief)}"
        launch = f"(setsid bash -c {shlex.quote(named)} > /dev/null 2>&1 < /dev/null &)"
        ctx.exec(["/bin/bash", "-c", launch], 60)
        planted.append(ctx.exec(["/bin/bash", "-c", alive], 60).exit_code)

    result = _trial_with(
        local, monkeypatch, [f"! {alive} && ! test -s /tmp/stolen"], prepare_and_plant
    )
    assert planted == [0]  # the thief was running when the preparation ended
    assert (result.outcome, result.cause) == ("success", "")


# -- a planted .git: refused, and no git of the preparation runs a hook ---------------------------


def _archive_with_a_hook(path, marker):
    """An sdist-shaped archive whose .git holds a post-commit hook that touches `marker`."""
    hook = f"#!/bin/sh\ntouch {marker}\n".encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data, mode in (
            ("pkg-1.0/setup.py", b"", 0o644),
            ("pkg-1.0/.git/hooks/post-commit", hook, 0o755),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return path


def test_an_archive_holding_a_git_is_refused_on_the_host_and_in_the_sandbox(tmp_path):
    marker = tmp_path / "hook-ran"
    archive = _archive_with_a_hook(tmp_path / "pkg.tar.gz", marker)
    with pytest.raises(TraceError, match=r"refusing member 'pkg-1.0/\.git/hooks/post-commit'"):
        check_members(archive, TraceError)
    with pytest.raises(BundleError, match=r"refusing member 'pkg-1.0/\.git/hooks/post-commit'"):
        make_bundle(archive, tmp_path / "out.bundle", "unit")
    # The sandbox's own check, for an archive that reached it anyway.
    workdir = tmp_path / "app"
    workdir.mkdir()
    script = replay.prepare_script(load_trace(SIX), str(archive), str(workdir))
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "the archive holds a .git: refused" in done.stderr
    assert not marker.exists()


def test_the_preparations_git_runs_no_hook(tmp_path):
    marker = tmp_path / "hook-ran"
    hooks = tmp_path / "repo" / ".git" / "hooks"
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    commit = "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"
    subprocess.run(["bash", "-c", f"{SAFE_GIT_EXPORT}; {commit}"], cwd=hooks.parent.parent)
    assert not marker.exists()
    subprocess.run(["bash", "-c", commit], cwd=hooks.parent.parent, check=True)
    assert marker.exists()  # the same commit without the settings runs it
