"""Trace replay as scripts and records (spec: deepswe.txt, "Measurement" and "Failures").

Pure functions, no Django and no sandbox: `prepare_script` unpacks the pinned archive into a git
repository (untimed), `replay_script` is the one background script that starts the loopback deny
proxy (untimed) and runs every command in /app between two guest clock readings under
`timeout --kill-after=5s`, and `parse_records` / `judge` turn what that script wrote into an
outcome with per-command runtimes and per-stage sums. runner/benchmarks/deepswe.py moves the
bytes; bench/bench_replay.py and `bench trace record` run the same scripts on a host directory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from runner.clock import gate
from runner.outcomes import Outcome
from runner.traces import classify
from runner.traces.format import GIT_AUTHOR, GIT_DATE, GIT_EMAIL, Trace

WORKDIR = "/app"
# Replay files live inside .git so they never show in `git status` or the patch digest.
STATE_DIR = ".git/boxbench"
RECORDS = f"{STATE_DIR}/records"
OUTPUT_LOG = f"{STATE_DIR}/output.log"
PROXY_SCRIPT = f"{STATE_DIR}/denyproxy.py"
MIN_LIMIT_S = 180  # "at least three minutes or three times the original recorded step duration"
KILL_AFTER = "5s"
# Caches whose presence depends on the sandbox's Python settings, not on the commands.
GIT_EXCLUDES = ("__pycache__/", "*.pyc", ".pytest_cache/")
# Exit codes of `timeout`: 124 when it stopped the command, 137 when it had to kill it.
TIMEOUT_CODES = (124, 137)
SETUP_FAILED = 90
HOME = "/tmp/boxbench-home"


@dataclass(frozen=True)
class CommandRun:
    index: int
    exit_code: int
    wall_ms: float
    uptime_ms: float

    @property
    def gate_ok(self) -> bool:
        return gate(self.wall_ms, self.uptime_ms)


@dataclass
class ReplayRecords:
    """What the replay script wrote, in order; `done` only once the digest matched."""

    commands: list[CommandRun] = field(default_factory=list)
    proxy_port: int | None = None
    mismatch: tuple[int, int, int] | None = None  # (index, got, expected)
    digest: str | None = None
    digest_mismatch: bool = False
    setup_error: str = ""
    done: bool = False


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome  # success, excluded, provider failure or benchmark error
    cause: str
    tool_time_ms: float | None = None
    stage_ms: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False  # the caller must check the sandbox still answers


def command_limit_s(duration_ms: float) -> int:
    return max(MIN_LIMIT_S, math.ceil(3 * duration_ms / 1000))


def bash_quote(text: str) -> str:
    """A Bash $'...' word for any text, so commands with quotes and heredocs pass unchanged."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == "'":
            out.append("\\'")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 32 or ord(char) == 127:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def prepare_script(trace: Trace, archive: str, workdir: str = WORKDIR) -> str:
    """Untimed: unpack `archive` into an empty `workdir` and commit it with a fixed identity."""
    strip = trace.repository.strip_components
    excludes = "\\n".join(GIT_EXCLUDES)
    return f"""set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C.UTF-8
cd {workdir}
if [ -n "$(ls -A .)" ]; then echo "{workdir} is not empty" >&2; exit 1; fi
tar -xzf {archive} --strip-components={strip} --no-same-owner --no-same-permissions
rm -f {archive}
git init -q -b main .
git config user.name '{GIT_AUTHOR}'
git config user.email '{GIT_EMAIL}'
git config core.autocrlf false
git config core.fileMode true
printf '{excludes}\\n' >> .git/info/exclude
mkdir -p {STATE_DIR}
git add -A
export GIT_AUTHOR_DATE='{GIT_DATE}' GIT_COMMITTER_DATE='{GIT_DATE}'
git commit -q -m 'boxbench: {trace.slug}'
"""


# No EXIT trap of our own: the guest clock wrapper around this script owns that trap, so every
# way out goes through __bb_end, which stops the deny proxy first.
# __bb_clocks takes a wall reading between two /proc/uptime reads and keeps it only when both
# reads show the same 10 ms tick: on a busy host the shell can be descheduled between two reads
# for tens of milliseconds (seen here: 110 ms at load 9 on 2 cores), which would make the uptime
# span exceed the wall span and fail the clock gate with no clock step. Five tries, then the last.
_RUN_FUNCTION = r"""__bb_end() {
  [ -n "${__bb_proxy:-}" ] && kill "$__bb_proxy" 2> /dev/null
  exit "$1"
}
__bb_clocks() {
  local i u
  for i in 1 2 3 4 5; do
    read -r -N 64 __bb_u < /proc/uptime; __bb_w=$EPOCHREALTIME; read -r -N 64 u < /proc/uptime
    [ "${__bb_u%% *}" = "${u%% *}" ] && break
  done
  __bb_u=${__bb_u%% *}
}
__bb_run() {
  local u0 w0 rc
  __bb_clocks; u0=$__bb_u; w0=$__bb_w
  timeout --kill-after=KILL_AFTER "$3" bash -c "$4" < /dev/null >&4 2>&4
  rc=$?
  __bb_clocks
  printf '__CMD %s %s %s %s %s %s\n' "$1" "$rc" "$w0" "$__bb_w" "$u0" "$__bb_u" >&3
  if [ "$2" != any ] && [ "$rc" != "$2" ]; then
    printf '__MISMATCH %s %s %s\n' "$1" "$rc" "$2" >&3; __bb_end 3
  fi
}
"""


def replay_script(
    trace: Trace,
    workdir: str = WORKDIR,
    proxy: bool = True,
    recording: bool = False,
    home: str = HOME,
) -> str:
    """The one background script: proxy, every command timed in order, then the patch digest.

    `recording` replays a new session once to learn its exit codes and digest: no command's exit
    code is checked and the digest is written, not compared. HOME is set outside the working
    directory, so caches that tools write there never reach the patch digest.
    """
    head = f"""cd {workdir} || exit {SETUP_FAILED}
exec 3>> {RECORDS} 4>> {OUTPUT_LOG} || exit {SETUP_FAILED}
unset BASH_ENV ENV CDPATH
export LC_ALL=C.UTF-8 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 TERM=dumb HOME={home}
mkdir -p "$HOME" || exit {SETUP_FAILED}
"""
    if proxy:
        head += f"""python3 {PROXY_SCRIPT} --port-file {STATE_DIR}/proxy.port \
  >> {STATE_DIR}/proxy.log 2>&1 < /dev/null &
__bb_proxy=$!
for __bb_i in $(seq 100); do [ -s {STATE_DIR}/proxy.port ] && break; sleep 0.05; done
if ! read -r __bb_port < {STATE_DIR}/proxy.port; then
  echo '__SETUP deny proxy did not start' >&3; __bb_end {SETUP_FAILED}
fi
__bb_url=http://127.0.0.1:$__bb_port
export HTTP_PROXY=$__bb_url HTTPS_PROXY=$__bb_url http_proxy=$__bb_url https_proxy=$__bb_url
export PIP_INDEX_URL=$__bb_url/simple/ ALL_PROXY=$__bb_url all_proxy=$__bb_url
unset NO_PROXY no_proxy
printf '__PROXY %s\\n' "$__bb_port" >&3
"""
    lines = [_RUN_FUNCTION.replace("KILL_AFTER", KILL_AFTER), head]
    for index, command in enumerate(trace.commands):
        limit = command_limit_s(command.duration_ms)
        expected = "any" if recording else command.exit_code
        quoted = bash_quote(command.command)
        lines.append(f"__bb_run {index} {expected} {limit}s {quoted}\n")
    lines.append(digest_snippet("printf '__DIGEST %s\\n' \"$__bb_digest\" >&3\n"))
    if not recording:
        lines.append(
            f'if [ "$__bb_digest" != "{trace.patch_sha256}" ]; then '
            "printf '__MISMATCH digest\\n' >&3; __bb_end 4; fi\n"
        )
    lines.append("printf '__DONE\\n' >&3\n__bb_end 0\n")
    return "".join(lines)


def digest_snippet(then: str) -> str:
    """Bash that sets $__bb_digest to SHA-256 of `git diff HEAD` plus `git status --porcelain`."""
    return (
        "__bb_digest=$( { git --no-pager diff --no-color --no-ext-diff --full-index HEAD; "
        "git status --porcelain --untracked-files=normal; } | sha256sum )\n"
        "__bb_digest=${__bb_digest%% *}\n" + then
    )


def parse_records(text: str) -> ReplayRecords:
    """Read the records file; a malformed line is our defect (ValueError), not the provider's."""
    records = ReplayRecords()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        tag = parts[0]
        try:
            if tag == "__CMD" and len(parts) == 7:
                w0, w1, u0, u1 = (_decimal(p) for p in parts[3:7])
                records.commands.append(
                    CommandRun(
                        index=int(parts[1]),
                        exit_code=int(parts[2]),
                        wall_ms=float((w1 - w0) * 1000),
                        uptime_ms=float((u1 - u0) * 1000),
                    )
                )
            elif tag == "__PROXY" and len(parts) == 2:
                records.proxy_port = int(parts[1])
            elif tag == "__MISMATCH" and parts[1:] == ["digest"]:
                records.digest_mismatch = True
            elif tag == "__MISMATCH" and len(parts) == 4:
                index, got, expected = (int(p) for p in parts[1:])
                records.mismatch = (index, got, expected)
            elif tag == "__DIGEST" and len(parts) == 2 and re.fullmatch(r"[0-9a-f]{64}", parts[1]):
                records.digest = parts[1]
            elif tag == "__SETUP":
                records.setup_error = line[len("__SETUP") :].strip()
            elif tag == "__DONE" and len(parts) == 1:
                records.done = True
            else:
                raise ValueError("unknown record")
        except (ValueError, InvalidOperation) as exc:
            problem = f"replay records line {number}: cannot parse {line!r} ({exc})"
            raise ValueError(problem) from None
    return records


def _decimal(text: str) -> Decimal:
    # Decimal keeps the microseconds of a 10-digit epoch exact; some locales print a comma.
    return Decimal(text.replace(",", "."))


def judge(trace: Trace, records: ReplayRecords) -> Verdict:
    """The Failures table: success, excluded (does not replay here) or provider failure."""
    if records.setup_error:
        return Verdict(Outcome.BENCHMARK_ERROR, f"replay setup failed: {records.setup_error}")
    expected_indices = list(range(len(records.commands)))
    if [c.index for c in records.commands] != expected_indices:
        return Verdict(Outcome.BENCHMARK_ERROR, "replay records are out of order")
    if records.mismatch is not None:
        index, got, expected = records.mismatch
        command = trace.commands[index]
        limit_ms = command_limit_s(command.duration_ms) * 1000
        ran = records.commands[index].wall_ms if index < len(records.commands) else 0.0
        if got in TIMEOUT_CODES and ran >= limit_ms - 50:
            return Verdict(
                Outcome.EXCLUDED,
                f"command {index} timed out after {limit_ms / 1000:.0f} s (exit {got}): "
                f"{_short(command.command)}",
                timed_out=True,
            )
        return Verdict(
            Outcome.EXCLUDED,
            f"command {index} exited {got}, the trace recorded {expected}: "
            f"{_short(command.command)}",
        )
    if records.digest_mismatch:
        return Verdict(
            Outcome.EXCLUDED,
            f"final git patch SHA-256 {records.digest} differs from the trace's "
            f"{trace.patch_sha256}",
        )
    if not records.done or len(records.commands) != len(trace.commands):
        return Verdict(
            Outcome.PROVIDER_FAILURE,
            f"the replay script ended after {len(records.commands)} of {len(trace.commands)} "
            "commands without writing a mismatch record",
        )
    stepped = [c.index for c in records.commands if not c.gate_ok]
    if stepped:
        first = records.commands[stepped[0]]
        return Verdict(
            Outcome.PROVIDER_FAILURE,
            f"stepped clock: command {first.index} took {first.wall_ms:.1f} ms by $EPOCHREALTIME "
            f"and {first.uptime_ms:.1f} ms by /proc/uptime ({len(stepped)} commands failed the "
            "clock gate)",
        )
    return Verdict(
        Outcome.SUCCESS,
        "",
        tool_time_ms=sum(c.wall_ms for c in records.commands),
        stage_ms=stage_sums(trace, records.commands),
    )


def stage_sums(trace: Trace, runs: list[CommandRun]) -> dict[str, float]:
    """Per-stage sums of command runtimes, every stage present (0 when none of its commands)."""
    sums = dict.fromkeys(classify.STAGES, 0.0)
    for run in runs:
        sums[classify.classify(trace.commands[run.index].command)] += run.wall_ms
    return sums


def _short(command: str, width: int = 120) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
