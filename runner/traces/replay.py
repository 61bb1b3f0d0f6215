"""Trace replay as scripts and records (spec: deepswe.txt, "Measurement" and "Failures").

Pure functions, no Django and no sandbox: `prepare_script` unpacks the pinned archive into a git
repository (untimed), `replay_script` is the one background script that starts the loopback deny
proxy (untimed) and runs every command in /app between two guest clock readings under the spec's
per-command limit, `timeout --kill-after=5s LIMIT` inside the measured span (see _RUN_FUNCTION), and
`parse_records` / `judge` turn what that script wrote into an outcome with per-command runtimes and
per-stage sums. Every record is sealed with a per-trial key the commands never see (`seal`,
docs/traces.md), so a command that rewrites the records makes a benchmark error, not a number.
runner/benchmarks/deepswe.py moves the bytes; bench/bench_replay.py and `bench trace record` run
the same scripts on a host directory.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Protocol

from runner.clock import gate
from runner.outcomes import Outcome
from runner.traces import classify, guard
from runner.traces.format import GIT_AUTHOR, GIT_DATE, GIT_EMAIL, Command, Trace

WORKDIR = "/app"
# Replay files live inside .git so they never show in `git status` or the patch digest.
STATE_DIR = ".git/boxbench"
RECORDS = f"{STATE_DIR}/records"
OUTPUT_LOG = f"{STATE_DIR}/output.log"
PROXY_SCRIPT = f"{STATE_DIR}/denyproxy.py"
# The trial's seal key: put here just before the replay, read and removed by the sealer before
# the first command, so no replayed command can read it (guard.py, seal()).
KEY_FILE = f"{STATE_DIR}/key"
FIRST_SEAL = "start"
MIN_LIMIT_S = 180  # "at least three minutes or three times the original recorded step duration"
KILL_AFTER_S = 5  # `timeout --kill-after=5s`: KILL the process group 5 s after TERM
# Caches whose presence depends on the sandbox's Python settings, not on the commands.
GIT_EXCLUDES = ("__pycache__/", "*.pyc", ".pytest_cache/")
# The exit code recorded for a command the limit stopped: `timeout`'s own, whether it ended the
# command with TERM (124) or had to KILL it (137, which `timeout` gets by killing itself too).
TIMEOUT_EXIT = 124
TIMEOUT_KILLED = 137
SETUP_FAILED = 90
HOME = "/tmp/boxbench-home"


class Session(Protocol):
    """What a replay reads of its unit: a trace (format.Trace) or a CI pipeline
    (runner/pipelines/format.Pipeline), whose steps are its commands, each expected to exit 0."""

    @property
    def slug(self) -> str: ...

    @property
    def commands(self) -> tuple[Command, ...]: ...

    @property
    def patch_sha256(self) -> str: ...


@dataclass(frozen=True)
class CommandRun:
    index: int
    exit_code: int
    wall_ms: float
    uptime_ms: float

    @property
    def gate_ok(self) -> bool:
        return gate(self.wall_ms, self.uptime_ms)


@dataclass(frozen=True)
class CommandTimeout:
    """A command the per-command limit stopped: which one, its limit, and `timeout`'s status."""

    index: int
    limit_s: int
    status: int  # 124 (ended by TERM) or 137 (KILL, 5 s later)

    def evidence(self) -> dict:
        return {"command": self.index, "limit_s": self.limit_s, "timeout_status": self.status}


@dataclass
class ReplayRecords:
    """What the replay script wrote, in order; `done` only once the digest matched."""

    commands: list[CommandRun] = field(default_factory=list)
    proxy_port: int | None = None
    mismatch: tuple[int, int, int] | None = None  # (index, got, expected)
    timeout: CommandTimeout | None = None  # the first command the limit stopped
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
    """Untimed: unpack `archive` into an empty `workdir` and commit it with a fixed identity,
    every git without hooks or fsmonitor (the archive's members were checked on the host too:
    format.check_members)."""
    strip = trace.repository.strip_components
    excludes = "\\n".join(GIT_EXCLUDES)
    return f"""set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C.UTF-8
{guard.SAFE_GIT_EXPORT}
cd {workdir}
if [ -n "$(ls -A .)" ]; then echo "{workdir} is not empty" >&2; exit 1; fi
tar -xzf {archive} --strip-components={strip} --no-same-owner --no-same-permissions
rm -f {archive}
if [ -e .git ]; then echo "the archive holds a .git: refused" >&2; exit 1; fi
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
# way out goes through __bb_end, which stops the deny proxy first and waits for its end: a
# signalled process is not gone until the kernel runs it again, which on a busy host came after
# the script's own end. KILL, since a command of the trace could have stopped the proxy.
# __bb_clocks takes a wall reading between two /proc/uptime reads and keeps it only when both
# reads show the same 10 ms tick: on a busy host the shell can be descheduled between two reads
# for tens of milliseconds (seen here: 110 ms at load 9 on 2 cores), which would make the uptime
# span exceed the wall span and fail the clock gate with no clock step. Five tries, then the last.
#
# The per-command limit is the spec's own: each command runs as
# `timeout --kill-after=5s LIMITs bash -c CMD` between the two readings, so the measured span is
# the spec's (the `timeout` process included, nothing else of the limit). `timeout` puts itself
# and the command in a process group of their own, sends TERM to the group at the limit and KILL
# 5 s later, and exits 124 (137 once it had to KILL). Whether the limit stopped the command is
# decided after the end reading, outside the span: the status is 124 or 137 and the command ran
# at least its limit by either clock (a command that exits 124 or is killed sooner did not time
# out). A timeout writes __TIMEOUT INDEX LIMIT STATUS after the command's record and ends the
# replay, whatever exit code the trace recorded; a recording replay carries on.
_RUN_FUNCTION = r"""__bb_put() {
  printf '%s\n' "$1" >&"${__bb_sealer[1]}" || __bb_end SETUP_FAILED
}
__bb_end() {
  local sealer=${__bb_sealer_PID:-}
  if [ -n "${__bb_proxy:-}" ]; then
    kill -KILL "$__bb_proxy" 2> /dev/null; wait "$__bb_proxy" 2> /dev/null
  fi
  if [ -n "$sealer" ]; then eval "exec ${__bb_sealer[1]}>&-"; wait "$sealer"; fi
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
  LIMIT_PREFIXbash -c "$4" < /dev/null >&4 2>&4 3>&- 4>&-
  rc=$?
  __bb_clocks
TIMEOUT_CHECK  __bb_put "__CMD $1 $rc $w0 $__bb_w $u0 $__bb_u"
  if [ "$2" != any ] && [ "$rc" != "$2" ]; then
    __bb_put "__MISMATCH $1 $rc $2"; __bb_end 3
  fi
}
"""
_LIMIT_PREFIX = 'timeout --kill-after=KILL_AFTER_Ss "$3s" '
_TIMEOUT_CHECK = r"""  if (( rc == TIMEOUT_EXIT || rc == TIMEOUT_KILLED )) && {
    (( ${__bb_w/[.,]/} - ${w0/[.,]/} >= $3 * 1000000 )) ||
    (( 10#${__bb_u/[.,]/} - 10#${u0/[.,]/} >= $3 * 100 - 1 )); }; then
    __bb_put "__CMD $1 TIMEOUT_EXIT $w0 $__bb_w $u0 $__bb_u"
    __bb_put "__TIMEOUT $1 $3 $rc"
    [ "$2" = any ] || __bb_end 3
    return 0
  fi
"""
# Untimed, before the first command: an image without a `timeout` that takes --kill-after cannot
# run the spec's limit, which is the benchmark's problem, not the provider's.
_LIMIT_CHECK = f"""if ! timeout --kill-after={KILL_AFTER_S}s 5s true < /dev/null >&4 2>&4; then
  __bb_put '__SETUP the per-command limit needs timeout --kill-after={KILL_AFTER_S}s: it fails here'
  __bb_end {SETUP_FAILED}
fi
"""


def replay_script(
    trace: Session,
    workdir: str = WORKDIR,
    proxy: bool = True,
    recording: bool = False,
    home: str = HOME,
    limit: bool = True,
    verify: str | None = None,
) -> str:
    """The one background script: proxy, every command timed in order, then the patch digest.

    `recording` replays a new session once to learn its exit codes and digest: no command's exit
    code is checked and the digest is written, not compared. HOME is set outside the working
    directory, so caches that tools write there never reach the patch digest. `limit=False`
    drops the per-command limit (`timeout`) and nothing else: only the reference that
    bench/bench_replay.py and the tests compare the limited replay with, never a trial.
    `verify` is Bash that sets $__bb_digest in place of the patch digest (a CI pipeline's
    artifacts); untimed like it, after the last command.
    """
    head = f"""cd {workdir} || exit {SETUP_FAILED}
exec 4>> {OUTPUT_LOG} || exit {SETUP_FAILED}
{sealer_start()}
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
  __bb_put '__SETUP deny proxy did not start'; __bb_end {SETUP_FAILED}
fi
__bb_url=http://127.0.0.1:$__bb_port
export HTTP_PROXY=$__bb_url HTTPS_PROXY=$__bb_url http_proxy=$__bb_url https_proxy=$__bb_url
export PIP_INDEX_URL=$__bb_url/simple/ ALL_PROXY=$__bb_url all_proxy=$__bb_url
unset NO_PROXY no_proxy
__bb_put "__PROXY $__bb_port"
"""
    if limit:
        head += _LIMIT_CHECK
    lines = [_run_function(limit), head]
    for index, command in enumerate(trace.commands):
        limit_s = command_limit_s(command.duration_ms)
        expected = "any" if recording else command.exit_code
        quoted = bash_quote(command.command)
        lines.append(f"__bb_run {index} {expected} {limit_s} {quoted}\n")
    then = '__bb_put "__DIGEST $__bb_digest"\n'
    lines.append(verify + then if verify is not None else digest_snippet(then))
    if not recording:
        lines.append(
            f'if [ "$__bb_digest" != "{trace.patch_sha256}" ]; then '
            "__bb_put '__MISMATCH digest'; __bb_end 4; fi\n"
        )
    lines.append("__bb_put __DONE\n__bb_end 0\n")
    outer = f"cd {workdir} || exit {SETUP_FAILED}\nunset BASH_ENV ENV CDPATH\n"
    return outer + guard.sealed_shell(STATE_DIR, "".join(lines), bash_quote)


def sealer_start() -> str:
    """Bash that starts the sealer (guard.SEALER) as a coproc and waits until it holds the key
    and has removed its file; the replay ends before its first command when it cannot."""
    return f"""coproc __bb_sealer {{ exec python3 -I -S -c {bash_quote(guard.SEALER)} \\
  {KEY_FILE} {RECORDS} 2>&4 4>&-; }}
__bb_ready=
read -r __bb_ready <&"${{__bb_sealer[0]}}"
if [ "$__bb_ready" != ready ]; then
  [ -s {RECORDS} ] || echo '__SETUP the sealer did not start' >> {RECORDS}
  exit {SETUP_FAILED}
fi"""


def _run_function(limit: bool = True) -> str:
    return (
        _RUN_FUNCTION.replace("LIMIT_PREFIX", _LIMIT_PREFIX if limit else "")
        .replace("TIMEOUT_CHECK", _TIMEOUT_CHECK if limit else "")
        .replace("TIMEOUT_EXIT", str(TIMEOUT_EXIT))
        .replace("TIMEOUT_KILLED", str(TIMEOUT_KILLED))
        .replace("KILL_AFTER_S", str(KILL_AFTER_S))
        .replace("SETUP_FAILED", str(SETUP_FAILED))
    )


def digest_snippet(then: str) -> str:
    """Bash that sets $__bb_digest to SHA-256 of `git diff HEAD` plus `git status --porcelain`."""
    return (
        "__bb_digest=$( { git --no-pager diff --no-color --no-ext-diff --full-index HEAD; "
        "git status --porcelain --untracked-files=normal; } | sha256sum )\n"
        "__bb_digest=${__bb_digest%% *}\n" + then
    )


def new_key() -> str:
    """A fresh seal key for one replay: 256 random bits, as hex."""
    return secrets.token_hex(32)


def seal(key: str, previous: str, record: str) -> str:
    """The seal the script appends to `record` (its __bb_put): SHA-256 of the key, the previous
    line's seal and the record, so a line changed, added, dropped or moved breaks every seal
    after it, and none can be made without the key. Records are short ASCII words parsed
    strictly, so a length-extended message could not pass as one."""
    return hashlib.sha256(f"{key} {previous} {record}".encode()).hexdigest()


def seal_lines(key: str, records: list[str]) -> str:
    """`records` sealed as the script writes them (the reference the tests compare Bash with)."""
    lines, previous = [], FIRST_SEAL
    for record in records:
        previous = seal(key, previous, record)
        lines.append(f"{record} {previous}\n")
    return "".join(lines)


def parse_records(text: str, key: str) -> ReplayRecords:
    """Read the records file. A line whose seal does not match (a replayed command wrote into the
    file, or someone changed it since) or a malformed line is a benchmark error (ValueError):
    never a number."""
    records = ReplayRecords()
    previous = FIRST_SEAL
    for number, sealed in enumerate(text.splitlines(), start=1):
        if not sealed.strip():
            continue
        line, _, found = sealed.rpartition(" ")
        expected = seal(key, previous, line)
        if not hmac.compare_digest(found.encode(), expected.encode()):
            raise ValueError(
                f"replay records line {number}: its seal does not match: the records were "
                f"changed after the replay wrote them ({_short(sealed, 80)!r})"
            )
        previous = expected
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
            elif tag == "__TIMEOUT" and len(parts) == 4:
                index, limit_s, status = (int(p) for p in parts[1:])
                if status not in (TIMEOUT_EXIT, TIMEOUT_KILLED) or limit_s <= 0:
                    raise ValueError("not a timeout's limit and status")
                if records.timeout is None:
                    records.timeout = CommandTimeout(index, limit_s, status)
            elif tag == "__PROXY" and len(parts) == 2:
                records.proxy_port = int(parts[1])
            elif tag == "__MISMATCH" and parts[1:] == ["digest"]:
                records.digest_mismatch = True
            elif tag == "__MISMATCH" and len(parts) == 4:
                mismatch_at, got, wanted = (int(p) for p in parts[1:])
                records.mismatch = (mismatch_at, got, wanted)
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


def judge(
    trace: Session,
    records: ReplayRecords,
    stages: list[str] | None = None,
    result: str = "final git patch",
) -> Verdict:
    """The Failures table: success, excluded (does not replay here) or provider failure.

    `stages` gives each command's stage where the unit declares them (CI pipeline steps); by
    default the classifier labels each command. `result` names what the final digest covers."""
    if records.setup_error:
        return Verdict(Outcome.BENCHMARK_ERROR, f"replay setup failed: {records.setup_error}")
    expected_indices = list(range(len(records.commands)))
    if [c.index for c in records.commands] != expected_indices:
        return Verdict(Outcome.BENCHMARK_ERROR, "replay records are out of order")
    if records.timeout is not None:
        stopped = records.timeout
        if stopped.index >= len(trace.commands):
            return Verdict(Outcome.BENCHMARK_ERROR, f"replay records: no command {stopped.index}")
        how = "TERM" if stopped.status == TIMEOUT_EXIT else f"KILL {KILL_AFTER_S} s after TERM"
        return Verdict(
            Outcome.EXCLUDED,
            f"command {stopped.index} timed out: its limit of {stopped.limit_s} s passed and "
            f"timeout --kill-after={KILL_AFTER_S}s stopped it ({how}, exit {TIMEOUT_EXIT}): "
            f"{_short(trace.commands[stopped.index].command)}",
            timed_out=True,
        )
    if records.mismatch is not None:
        index, got, expected = records.mismatch
        return Verdict(
            Outcome.EXCLUDED,
            f"command {index} exited {got}, the trace recorded {expected}: "
            f"{_short(trace.commands[index].command)}",
        )
    if records.digest_mismatch:
        return Verdict(
            Outcome.EXCLUDED,
            f"{result} SHA-256 {records.digest} differs from the pinned {trace.patch_sha256}",
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
        stage_ms=stage_sums(trace, records.commands, stages),
    )


def stage_sums(
    trace: Session, runs: list[CommandRun], stages: list[str] | None = None
) -> dict[str, float]:
    """Per-stage sums of command runtimes, every stage present (0 when none of its commands)."""
    if stages is None:
        stages = [classify.classify(c.command) for c in trace.commands]
    sums = dict.fromkeys(classify.STAGES, 0.0)
    for run in runs:
        sums[stages[run.index]] += run.wall_ms
    return sums


def _short(command: str, width: int = 120) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
