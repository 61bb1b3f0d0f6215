"""What keeps a replay's seal key out of the replayed commands' reach (docs/traces.md, "The
records are sealed"). Pure text: Bash and Python sources run inside the sandbox; no Django.

The commands run as the same user as the replay script. Four routes to the key are closed:
  - Files, arguments and environments: the key goes to the sealer in a file it reads and removes
    before the first command; it is never in the script, an argument list or an environment.
  - Memory: the key lives only in the sealer, which makes itself non-dumpable (prctl) before it
    reads it, so /proc/PID/mem, /proc/PID/fd and ptrace of it are refused to its own user. The
    script that feeds it the records runs in a copy of bash that its user may execute but not
    read: the kernel makes such a process non-dumpable too (where the user cannot read every
    file anyway, as a `local` sandbox's cannot), so a command cannot write into the sealer's
    pipe through the script or change the script's memory. The sealer's pipe is Bash's coproc,
    whose descriptors no executed program inherits.
  - Processes left behind by the preparation (a hook of a planted `.git`, say): every process
    that was not there before the preparation is ended before the key is uploaded
    (`END_NEW_PROCESSES`).
  - `.git` members of a unit's archive: refused before anything is unpacked (format.py), and
    every git of the preparation runs with hooks and fsmonitor disabled (`SAFE_GIT`).
"""

from __future__ import annotations

# Every git the preparation runs, in the sandbox or on the host: no hook, no fsmonitor daemon.
SAFE_GIT_CONFIG = (("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false"))
SAFE_GIT_ARGS = tuple(arg for key, value in SAFE_GIT_CONFIG for arg in ("-c", f"{key}={value}"))
SAFE_GIT_ENV = {
    "GIT_CONFIG_COUNT": str(len(SAFE_GIT_CONFIG)),
    **{f"GIT_CONFIG_KEY_{i}": key for i, (key, _) in enumerate(SAFE_GIT_CONFIG)},
    **{f"GIT_CONFIG_VALUE_{i}": value for i, (_, value) in enumerate(SAFE_GIT_CONFIG)},
}
SAFE_GIT_EXPORT = "export " + " ".join(f"{k}={v}" for k, v in SAFE_GIT_ENV.items())

# The sealer: argv KEY_FILE RECORDS. Non-dumpable first, then the key (read, removed), then
# "ready" on stdout; each line on stdin is appended to RECORDS with its seal
# (replay.seal: SHA-256 of the key, the previous seal and the record).
SEALER = """import ctypes, hashlib, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
    sys.exit("the sealer cannot make itself non-dumpable")
key_path, records_path = sys.argv[1], sys.argv[2]
try:
    with open(key_path) as handle:
        key = handle.read().strip()
    os.unlink(key_path)
except OSError:
    key = ""
with open(records_path, "a") as out:
    if not key:
        out.write("__SETUP the seal key cannot be read\\n")
        sys.exit(1)
    print("ready", flush=True)
    previous = "start"
    for raw in sys.stdin.buffer:
        record = raw.decode(errors="replace").rstrip("\\n")
        previous = hashlib.sha256(f"{key} {previous} {record}".encode()).hexdigest()
        out.write(f"{record} {previous}\\n")
        out.flush()
"""

# Ends every process of the sandbox that is not in the list given as $1 ("PID:START ..." as
# PROCESSES printed it before the preparation), not this script or one of its ancestors, and
# shares this script's mount namespace (a provider whose sandboxes share the host's process
# table, as a test stand-in does, never has a host process ended). Again until none is left:
# a process can fork while a pass runs. Exit 1 naming what is left after 100 passes.
_STAT = 'read -r __s 2> /dev/null < "/proc/$__p/stat" || continue; __s=${__s##*) }; set -- $__s'
PROCESSES = (
    "for __d in /proc/[1-9]*; do __p=${__d#/proc/}; " + _STAT + '; printf "%s:%s " "$__p" "${20}"; '
    "done"
)
END_NEW_PROCESSES = (
    'keep=" $1 "; __p=$BASHPID\n'
    "while [[ $__p =~ ^[1-9][0-9]*$ ]]; do\n"
    '  read -r __s 2> /dev/null < "/proc/$__p/stat" || break; __s=${__s##*) }; set -- $__s\n'
    '  keep+="$__p:${20} "; __p=$2\n'
    "done\n"
    "for ((pass = 0; pass < 100; pass++)); do\n"
    "  left=()\n"
    "  for __d in /proc/[1-9]*; do\n"
    "    __p=${__d#/proc/}; " + _STAT + "\n"
    '    [[ $1 == [ZX] || $keep == *" $__p:${20} "* ]] && continue\n'
    "    [[ $__d/ns/mnt -ef /proc/self/ns/mnt ]] || continue\n"
    '    kill -KILL "$__p" 2> /dev/null && left+=("$__p")\n'
    "  done\n"
    "  (( ${#left[@]} )) || exit 0\n"
    "done\n"
    'echo "processes ${left[*]} are still running after 100 rounds of SIGKILL" >&2; exit 1\n'
)


def sealed_shell(state_dir: str, inner: str, quote) -> str:
    """Bash that runs `inner` in a copy of bash its user may execute but not read (see the
    module's docstring); `quote` makes a Bash word of a text (replay.bash_quote)."""
    shell = f"{state_dir}/bash"
    return (
        f'rm -f {shell} && cp -- "$(command -v bash)" {shell} && chmod 0111 {shell} || exit 90\n'
        f"{shell} -c {quote(inner)} replay\n"
    )
