"""Commands that try to pass a trailer of their own off as the guest clock wrapper's, and a probe
that looks for the call's key wherever a program the command starts can read.

Shared by the wrapper's tests on the host (tests/runner/test_clock.py) and the end-to-end ones in
a real `local` sandbox (tests/runner/test_clock_key.py)."""

import secrets

# A wall span of 80 s over an uptime span of 100 ms: a stepped clock, if it were believed.
TIMES = "10.000000 90.000000 5.00 5.10"


def forged_line(key: str) -> str:
    """printf's format for a trailer with `key` ("" for the older form, which had none)."""
    return f"\\n__SANDBOX_CLOCK {key + ' ' if key else ''}{TIMES}\\n"


def attacks(key: str) -> dict[str, str]:
    """Each way a command can put a forged trailer on stderr, by what it does."""
    line = forged_line(key)
    by_program = f"/bin/sh -c \"printf '{line}' >&2\""
    return {
        # The shell is replaced, so the wrapper's EXIT trap never writes its trailer.
        "exec of a program that prints one": f"exec {by_program}",
        # The shell dies before its trap: only the forged line is left.
        "kill -9 of its own shell after printing one": f"printf '{line}' >&2; kill -9 $$",
        "a child program that prints one": by_program,
        # The child outlives the shell: its line comes after the wrapper's trailer.
        "a background child that prints one last": f"( sleep 0.2; {by_program} ) &",
        # The trailer's descriptor (fd 10 or above) is inherited by the programs it starts.
        "a child writing to every inherited descriptor": (
            "/bin/bash -c 'for fd in /proc/self/fd/*; do fd=${fd##*/}; "
            f'[ "$fd" -ge 10 ] && printf "{line}" >&"$fd"; done 2> /dev/null; :\''
        ),
    }


def forgeries() -> list[tuple[str, str]]:
    """(attack name, command) for a forged line without a key and with a guessed one."""
    guessed = secrets.token_hex(16)
    return [
        (f"{name}, {'a guessed key' if key else 'no key'}", command)
        for key in ("", guessed)
        for name, command in attacks(key).items()
    ]


# Run by a program the command starts (python3 -I -c): prints every command line and environment
# of its ancestors (or, with "all", of every process it can see), the regular files they hold
# open, and (with "all") every file under /tmp. What it could read at all is counted on stderr.
PROBE = r"""
import os, sys
everything = sys.argv[1:] == ["all"]
pids = [p for p in os.listdir("/proc") if p.isdigit()] if everything else []
pid = os.getppid()
while not everything and pid > 1:
    pids.append(str(pid))
    with open(f"/proc/{pid}/stat") as stat:
        pid = int(stat.read().rsplit(") ", 1)[1].split()[1])
found, read = [], 0

def take(path):
    global read
    try:
        with open(path, "rb") as file:
            found.append(file.read(1 << 20))
            read += 1
    except OSError:
        pass

for pid in pids:
    take(f"/proc/{pid}/cmdline")
    take(f"/proc/{pid}/environ")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        continue
    for fd in fds:
        if os.path.isfile(f"/proc/{pid}/fd/{fd}"):
            take(f"/proc/{pid}/fd/{fd}")
for root, _, names in os.walk("/tmp") if everything else ():
    for name in names:
        take(os.path.join(root, name))
sys.stdout.buffer.write(b"\0".join(found))
print(f"read {read} of {len(pids)} processes", file=sys.stderr)
"""


def probe_command(everything: bool = False) -> str:
    quoted = PROBE.replace("'", "'\\''")
    return f"python3 -I -c '{quoted}'{' all' if everything else ''}"
