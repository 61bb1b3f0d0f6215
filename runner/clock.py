"""The guest clock wrapper (common methodology, "Guest Timing and the Clock Gate").

`wrap(command)` returns a Bash script that reads /proc/uptime (with `read -r -N 64`, one whole-file
read, because virtualized procfs can fail on later line reads) and $EPOCHREALTIME before the
command and after it, with builtins only, and writes one `__SANDBOX_CLOCK` trailer line from an
EXIT trap, so `exit N` inside the command still reports its timing and keeps its exit code. The
trailer goes to a copy of stderr taken before the command, so a command that closes or redirects
its stderr cannot drop it.
The command runs in the wrapper's own shell: `true` is timed as the builtin, not as a subprocess.
Only the wrapper's own shell writes the trailer: a subshell of the command that runs the EXIT trap
(one killed by a signal while it still holds the trap) writes none.
`read -N` returns 1 at end of file even though it read the whole file: `|| :` (a builtin) keeps a
command's `set -e` from ending the EXIT trap before its trailer, or changing the exit code.

The call's key. A command can print a line shaped like a trailer, and a command that leaves no
trailer of the wrapper's (`exec prog`, `kill -9 $$`) would have had the runner take that line as
the guest clock's: a stepped clock at will, charged to the provider. So each call has a key of its
own (`new_key`, 128 random bits) that the wrapper's trailer carries, and `parse_trailer` accepts
only the trailer with the call's key; any other trailer-shaped line (no key, another key, a second
trailer) is the command's (ExtraTrailer, the benchmark's fault, never a stepped clock). The key
reaches the wrapper on its stdin (`key_input`), which it reads into an unexported variable before
the command and then replaces with /dev/null: it is in no process's argv or environment (both
readable in /proc by the command's own children) and, once read, in no descriptor. Where an
adapter's stdin costs requests inside exec (an uploaded file, stdin calls: stdin_adds_requests),
they would count in the timed total: the lifecycle uploads the key beforehand, untimed, to a file
named as the wrapper's $0 (`key_file`), which the wrapper empties before the command starts.
The trailer's descriptor is inherited by the command's programs (Bash cannot set close-on-exec),
but it is a copy of the command's own stderr: writing to it gives a program nothing it did not
have. The key is what makes the trailer the wrapper's.
Residual, by the methodology's design: the command runs in the wrapper's shell (it times guest
commands without a subprocess), so a builtin of the command (`echo $__bb_key`) can read the key,
and a program it starts can read the shell's memory through /proc/PID/mem where the kernel allows
a process to read its parent's (same user, no Yama; `local`'s seccomp filter refuses ptrace and
process_vm_readv, not that file). A forged trailer then needs code written against this wrapper.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from decimal import Decimal

TRAILER = b"__SANDBOX_CLOCK"
GATE_TOLERANCE_MS = 20.0

KEY_FILE_PREFIX = "/tmp/.boxbench-key-"


def _read_key(var: str) -> str:
    """Shell that reads the call's key into `var` and then gives the shell /dev/null as stdin.

    From the file named as $0 where the lifecycle uploaded it (stdin_adds_requests adapters),
    emptied at once (Bash cannot remove a file; a builtin redirection can truncate it), else from
    stdin.
    """
    return (
        f'{{ if [[ $0 == {KEY_FILE_PREFIX}* ]]; then read -r {var} < "$0"; : > "$0"; '
        f"else read -r {var}; fi; }} 2> /dev/null || :; exec < /dev/null"
    )


# Each /proc/uptime reading is paired with the $EPOCHREALTIME reading on its timed side (the
# wall reading after it at the start, before it at the end) and kept only when a second wall
# reading on its other side shows the pair took under PAIR_US: on a loaded host the shell can be
# paused between two reads (seen: ~110 ms), and an unpaired reading then fails the gate with no
# clock step. Five tries, then the last. The extra reads fall outside the timed span, so the
# wrapper adds only the start's comparison to it (a same-tick check would put a ~40 us uptime
# read at each end of the span). ${w/[.,]/} is the reading in whole microseconds.
# Names are prefixed: the command runs in this shell and must not see or clobber them.
PAIR_US = 2000
_PRELUDE = (
    "__bb_clock_end() { local __bb_i __bb_b; [[ $BASHPID == $__bb_pid ]] || return 0; "
    "for __bb_i in 1 2 3 4 5; do "
    "__bb_w1=$EPOCHREALTIME; read -r -N 64 __bb_u1 < UPTIME || :; __bb_b=$EPOCHREALTIME; "
    "(( ${__bb_b/[.,]/} - ${__bb_w1/[.,]/} < PAIR_US )) && break; done; "
    "printf '\\n__SANDBOX_CLOCK %s %s %s %s %s\\n' \"$__bb_key\" "
    '"$__bb_w0" "$__bb_w1" "${__bb_u0%% *}" "${__bb_u1%% *}" >&"$__bb_err"; }\n'
    # The key, then the command's stdin is /dev/null: nothing left to read the key from.
    + _read_key("__bb_key")
    + "\n"
    "__bb_pid=$BASHPID; exec {__bb_err}>&2\n"
    "trap __bb_clock_end EXIT\n"
    "for __bb_i in 1 2 3 4 5; do "
    "__bb_a=$EPOCHREALTIME; read -r -N 64 __bb_u0 < UPTIME || :; __bb_w0=$EPOCHREALTIME; "
    "(( ${__bb_w0/[.,]/} - ${__bb_a/[.,]/} < PAIR_US )) && break; done\n"
).replace("PAIR_US", str(PAIR_US))
_NUMBER = rb"(\d+(?:[.,]\d+)?)"
_TIMES = rb" ".join([_NUMBER] * 4)
# A line shaped like a trailer, with or without a key (an older wrapper's had none).
_ANY_TRAILER = re.compile(rb"^" + TRAILER + rb" (?:\S* )?" + _TIMES + rb"$", re.MULTILINE)
_KEY = re.compile(r"[0-9a-f]{32}")
# A trailer line with any key, compiled once: compiling a pattern with each call's own key cost
# more than the rest of a `true` call's handling on the job host (bench/bench_control_plane.py).
# Lines with another key are matched and skipped; they are the command's (ExtraTrailer below).
_KEYED = re.compile(rb"(?:^|\n)" + TRAILER + rb" ([0-9a-f]{32}) " + _TIMES + rb"(?:\n|$)")


@dataclass(frozen=True)
class GuestTiming:
    wall_ms: float  # $EPOCHREALTIME span
    uptime_ms: float  # /proc/uptime span (10 ms resolution)

    @property
    def gate_ok(self) -> bool:
        return gate(self.wall_ms, self.uptime_ms)


def wrap(command: str, uptime: str = "/proc/uptime") -> str:
    """The Bash script that runs `command` between two guest clock readings.

    `uptime` is the file read as /proc/uptime; tests pass a FIFO to play a paused shell.
    """
    if not command.strip():
        raise ValueError("the clock wrapper needs a command")
    # The newline ends a trailing comment or here-document in `command` before nothing else runs.
    return _PRELUDE.replace("UPTIME", _single_quote(uptime)) + command + "\n"


def new_key() -> str:
    """A call's key: 128 random bits, so no command can guess the wrapper's trailer."""
    return secrets.token_hex(16)


def key_file() -> str:
    """Where the lifecycle uploads a call's key for an adapter whose stdin is a file; the path is
    the wrapper's $0 (`bash -c SCRIPT PATH`)."""
    return KEY_FILE_PREFIX + secrets.token_hex(8)


def key_input(key: str) -> bytes:
    """The wrapper's stdin for a call with `key` (it reads one line, then gives the command
    /dev/null)."""
    return key.encode() + b"\n"


class ExtraTrailer(ValueError):
    """stderr holds a trailer-shaped line that is not the wrapper's: the command wrote one."""


def parse_trailer(stderr: bytes, key: str) -> tuple[bytes, GuestTiming | None]:
    """Split the wrapper's trailer off stderr: (stderr as the command wrote it, timing or None).

    The wrapper's trailer is the one line that carries `key`. ExtraTrailer when any other line is
    shaped like a trailer (no key, another key, the key twice), wherever it stands, with or
    without the wrapper's: only the command can have written it, to pass its own times off as the
    guest clock's, which is the benchmark's fault, never a stepped clock charged to the provider.
    None when there is neither: the wrapper ended before its trap (`exec prog`, a kill)."""
    if not _KEY.fullmatch(key):
        raise ValueError("a clock key is 32 lowercase hex digits (clock.new_key)")
    wanted = key.encode()
    matches = [m for m in _KEYED.finditer(stderr) if m.group(1) == wanted]
    if len(matches) > 1:
        raise ExtraTrailer(f"the command repeated the wrapper's {TRAILER.decode()} line")
    match = matches[0] if matches else None
    rest = stderr if match is None else stderr[: match.start()] + b"\n" + stderr[match.end() :]
    if _ANY_TRAILER.search(rest):
        raise ExtraTrailer(
            f"the command wrote a {TRAILER.decode()} line of its own (without this call's key)"
        )
    if match is None:
        return stderr, None
    # Decimal keeps the microseconds of a 10-digit epoch exact.
    w0, w1, u0, u1 = (Decimal(v.replace(b",", b".").decode()) for v in match.groups()[1:])
    timing = GuestTiming(wall_ms=float((w1 - w0) * 1000), uptime_ms=float((u1 - u0) * 1000))
    return stderr[: match.start()] + stderr[match.end() :], timing


def gate(wall_ms: float, uptime_ms: float, tol_ms: float = GATE_TOLERANCE_MS) -> bool:
    """True when both spans are non-negative and differ by at most `tol_ms`."""
    return wall_ms >= 0 and uptime_ms >= 0 and abs(wall_ms - uptime_ms) <= tol_ms


def background_script(command: str, tag: str) -> str:
    """Start the wrapped `command` detached, with its output and exit code in /tmp files; the
    launch's stdin is the call's `key_input`.

    `background_paths(tag)` names the files to poll and read back; `poll_command` waits for them.
    The timing comes from the guest clock inside the wrapper, so polling adds nothing to the
    runtime.
    """
    paths = background_paths(tag)
    base = paths["base"]
    quoted = _single_quote(wrap(command))
    # The subshell outlives this exec call (it is re-parented to the sandbox's init); its exit
    # code file appears atomically, by rename, only once the command has finished. Then one byte
    # goes into a FIFO, which wakes a poll that is waiting on it (opened read-write, neither side
    # blocks on open, and a byte written while no poll waits is simply not needed).
    # setsid: the command gets a session of its own, so an engine that ends the exec's session
    # when the call returns (seen once in ~260 Podman execs) cannot take it down with it.
    # Only setsid goes to the background, with its own redirections: `mkfifo F && setsid ... &`
    # would put the whole list in a subshell that keeps the exec's stdout and stderr open until
    # the command ends, so an adapter that reads them to EOF (local) would wait for all of it.
    # The launched process's pid is written before the launch returns, and a poll tells "gone"
    # by that process, not by the command's files: on a busy host the background shell can
    # start after a whole poll has waited, and a poll that found no output file yet ended a
    # live trial as "never started". (setsid runs in place: a background job of a shell without
    # job control leads no process group, so $! is the process that runs the command.)
    # The call's key comes on this launch's stdin (key_input) and goes on from shell to shell as
    # a here-string (a pipe in Bash 5.1 and later, an unlinked file before), each shell reading it
    # and dropping its stdin, so it never stands in an argv, an environment or a named file.
    return (
        f"{_read_key('k')}; mkfifo {paths['fifo']} && {{ "
        f"setsid bash -c 'read -r k 2> /dev/null || :; exec < /dev/null; "
        f'( bash -c "$1" > {base}.out 2> {base}.err <<< "$k"; '
        f"echo $? > {base}.rc.tmp; mv {base}.rc.tmp {paths['rc']}; "
        f"exec 9<> {paths['fifo']}; echo >&9 )' background {quoted} "
        f'> /dev/null 2>&1 <<< "$k" & }} && echo $! > {paths["pid"]}'
    )


def background_paths(tag: str) -> dict[str, str]:
    base = f"/tmp/.boxbench-bg-{tag}"
    return {
        "base": base,
        "out": f"{base}.out",
        "err": f"{base}.err",
        "rc": f"{base}.rc",
        "fifo": f"{base}.fifo",
        "pid": f"{base}.pid",
    }


def poll_command(tag: str, wait_s: float) -> list[str]:
    """One poll of a background command: exit 0 once it has finished, else 1 after `wait_s`.

    The poll waits inside the sandbox (Bash builtins only: no subprocess beside the command) and
    returns as soon as the command finishes, so no call lasts longer than `wait_s` and no finished
    command waits for the next poll.
    """
    paths = background_paths(tag)
    # Exit 0: finished; 1: still running (its launched process lives, whether or not it has
    # started the command yet); 2: gone without an exit code (never launched, or killed). The
    # process's state is read from /proc, not with `kill -0`, which a zombie still answers where
    # nothing reaps orphans; and before the exit code is looked for, since a command that ends
    # in between has renamed its exit code file into place by then.
    script = (
        'exec 9<> "$1"; [[ -e "$2" ]] || read -r -t "$3" -N 1 -u 9; '
        'read -r pid 2> /dev/null < "$4"; state=""; '
        '[[ $pid =~ ^[0-9]+$ ]] && read -r state 2> /dev/null < "/proc/$pid/stat"; '
        'state=${state##*) }; [[ -e "$2" ]] && exit 0; '
        "[[ -n $state && $state != Z* && $state != X* ]] && exit 1; exit 2"
    )
    return [
        "/bin/bash",
        "-c",
        script,
        "poll",
        paths["fifo"],
        paths["rc"],
        f"{wait_s:g}",
        paths["pid"],
    ]


def _single_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
