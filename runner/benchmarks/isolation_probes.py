"""What a sandbox really is: the probes of the Isolation benchmark, their commands and readings.

Pure (no Django): the scripts each probe runs inside the sandbox, the catalog of readings with
their expected answers, and the parsers that turn a probe's answer into numbers. Every answer is
read as hostile: a script prints one JSON object, and anything else, or a field of the wrong type
or out of range, is a ProbeError naming the probe and the field, never a traceback.

A reading is a number with a documented meaning (docs/methodology.md, "Isolation probes"): a
count, MiB, CPU-seconds per second, a flag (1 yes, 0 no) or a code. A reading the probe cannot
give is left out and its reason kept, never filled in.
"""

from __future__ import annotations

import errno
import json
import math
from dataclasses import dataclass, field

SCRIPT_LIMIT = 64 * 1024  # bytes of answer read; the scripts print a few hundred
BURN_SECONDS = 2.0
ALLOCATION_STEP_MIB = 64
ALLOCATION_HEADROOM = 1.25  # the allocation probe asks for the requested memory + 25 %
# Touching 5 GiB takes a few seconds of CPU; on a job host shared with other work (a CI run
# beside three test workers, a browser and a second test process) it took over 20 s, and the
# reading went missing. A generous bound, still well inside the exec's own (isolation.LIMITS_S).
ALLOCATION_LIMIT_S = 60
EGRESS_ADDRESS = ("1.1.1.1", 443)
EGRESS_TIMEOUT_S = 3
OPERATION_LIMIT_S = 5
NO_LIMIT_BYTES = 1 << 60  # cgroup v1 reports "no limit" as a page-rounded 2**63 - 1

# Errors that mean the sandbox refused the call: a seccomp filter or a missing capability
# (EPERM, EACCES), a call filtered as unknown (ENOSYS), and per operation the answers that mean
# the same thing there.
REFUSALS = frozenset({errno.EPERM, errno.EACCES, errno.ENOSYS})
REFUSED_ALSO = {
    "unshare_user": {errno.ENOSPC, errno.EUSERS},  # the user-namespace count is capped (at 0)
    "raw_socket": {errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT},  # no raw IP in this sandbox
}
# Answers that mean the call got past every permission check: success, and for a module the
# kernel judging our empty file as a module (only a caller allowed to load one gets that far).
ALLOWED_ALSO = {"module": {errno.ENOEXEC, errno.EINVAL}}
OPERATIONS = ("mount", "unshare_user", "ptrace", "keyctl", "bpf", "module", "raw_socket")

# Egress codes (reading egress_result).
EGRESS_CONNECTED = 1
EGRESS_NO_NETWORK = 2  # no interface but loopback, or no default route, inside the sandbox
EGRESS_POLICY = 3  # the socket or the connect refused with EPERM / EACCES
EGRESS_NO_ANSWER = 4  # nothing within the timeout: depends on the job host's network
EGRESS_UNREACHABLE = 5  # a route inside, and the network beyond said unreachable
EGRESS_REFUSED = 6  # the far end (or a middlebox) answered with a reset
EGRESS_OTHER = 7
EGRESS_WORDS = {
    EGRESS_CONNECTED: "connected",
    EGRESS_NO_NETWORK: "blocked by the sandbox: no network interface or route inside",
    EGRESS_POLICY: "blocked by the sandbox: the connect was refused (EPERM/EACCES)",
    EGRESS_NO_ANSWER: "no answer within 3 s (depends on the job host's network)",
    EGRESS_UNREACHABLE: "unreachable beyond the sandbox (a route exists inside)",
    EGRESS_REFUSED: "refused by the far end",
    EGRESS_OTHER: "another error",
}


class ProbeError(ValueError):
    """A probe's answer is malformed; the message names the probe and what is wrong."""


@dataclass(frozen=True)
class Probe:
    """One reading: its metric name, the probe group that reads it, and how to read it."""

    name: str
    group: str
    title: str
    unit: str  # CPUs, MiB, CPU-s/s, flag, code
    expected: str  # the answer of a sandbox that is what it was asked to be
    meaning: str


PROBES = (
    Probe(
        "cpus_visible",
        "resources",
        "CPUs visible",
        "CPUs",
        "{cpus}",
        "os.cpu_count(): the CPUs the sandbox sees online.",
    ),
    Probe(
        "cpus_affinity",
        "resources",
        "CPUs schedulable",
        "CPUs",
        "{cpus}",
        "len(os.sched_getaffinity(0)): the CPUs a process may run on.",
    ),
    Probe(
        "cpus_quota",
        "resources",
        "CPU quota in the cgroup",
        "CPUs",
        "{cpus}",
        "quota / period of cpu.max (cgroup v2) or cpu.cfs_quota_us (v1), as seen inside.",
    ),
    Probe(
        "cpus_enforced",
        "cpu_burn",
        "CPUs delivered",
        "CPU-s/s",
        "at most {cpus}",
        "CPU-seconds per wall-second of 2 × {cpus} busy processes over 2 s: near {cpus} when "
        "the limit holds, up to 2 × {cpus} when it does not.",
    ),
    Probe(
        "memory_visible_mib",
        "resources",
        "Memory visible",
        "MiB",
        "{memory_mib}",
        "MemTotal of /proc/meminfo.",
    ),
    Probe(
        "memory_limit_mib",
        "resources",
        "Memory limit in the cgroup",
        "MiB",
        "{memory_mib}",
        "memory.max (cgroup v2) or memory.limit_in_bytes (v1), as seen inside.",
    ),
    Probe(
        "memory_enforced_mib",
        "memory",
        "Largest allocation",
        "MiB",
        "at most {memory_mib}",
        "The most a child process allocated and touched, in 64 MiB steps up to 125 % of "
        "{memory_mib} MiB, before it was stopped.",
    ),
    Probe(
        "memory_limit_holds",
        "memory",
        "Memory limit holds",
        "flag",
        "1",
        "1: the allocation was stopped before 125 % of the requested memory; 0: it got it all.",
    ),
    Probe(
        "kernel_shared",
        "kernel",
        "Shares the job host's kernel",
        "flag",
        "1 for sandboxes on the job host's own kernel (shares_job_host), 0 for virtual machines",
        "1: the sandbox's /proc/sys/kernel/random/boot_id is the job host's.",
    ),
    Probe(
        "virt_hypervisor_flag",
        "virt",
        "Hypervisor CPU flag",
        "flag",
        "",
        "1: /proc/cpuinfo lists the hypervisor flag (a virtual machine, seen from inside).",
    ),
    Probe(
        "virt_sys_hypervisor",
        "virt",
        "/sys/hypervisor/type",
        "flag",
        "",
        "1: /sys/hypervisor/type names a hypervisor.",
    ),
    Probe(
        "runtime_container_file",
        "virt",
        "Container marker file",
        "flag",
        "",
        "1: /.dockerenv or /run/.containerenv exists.",
    ),
    Probe(
        "runtime_cgroup_named",
        "virt",
        "Container runtime in the cgroup path",
        "flag",
        "",
        "1: /proc/self/cgroup names docker, libpod, containerd, kubepods or lxc.",
    ),
    Probe(
        "egress_open",
        "egress",
        "Egress open",
        "flag",
        "0 (every benchmark cuts the network)",
        "1: a TCP connect to 1.1.1.1:443 succeeded; 0: the sandbox blocked it. Not recorded "
        "when the answer cannot tell (no answer, unreachable beyond the sandbox).",
    ),
    Probe(
        "egress_result",
        "egress",
        "Egress answer",
        "code",
        "2 or 3",
        "; ".join(f"{code}: {words}" for code, words in EGRESS_WORDS.items()) + ".",
    ),
    Probe(
        "refused_mount",
        "operations",
        "mount refused",
        "flag",
        "1",
        "mount(2) of a tmpfs: 1 refused, 0 done.",
    ),
    Probe(
        "refused_unshare_user",
        "operations",
        "user namespace refused",
        "flag",
        "1",
        "unshare(CLONE_NEWUSER): 1 refused, 0 done.",
    ),
    Probe(
        "refused_ptrace",
        "operations",
        "ptrace refused",
        "flag",
        "1",
        "ptrace(PTRACE_ATTACH) of a sibling process the probe started: 1 refused, 0 done.",
    ),
    Probe(
        "refused_keyctl",
        "operations",
        "keyctl refused",
        "flag",
        "1",
        "keyctl(KEYCTL_GET_KEYRING_ID, session keyring, create): 1 refused, 0 done.",
    ),
    Probe(
        "refused_bpf",
        "operations",
        "bpf refused",
        "flag",
        "1",
        "bpf(BPF_MAP_CREATE) of a one-entry array: 1 refused, 0 done.",
    ),
    Probe(
        "refused_module",
        "operations",
        "module loading refused",
        "flag",
        "1",
        "finit_module(2) of an empty file: 1 refused, 0 the kernel judged the file.",
    ),
    Probe(
        "refused_raw_socket",
        "operations",
        "raw socket refused",
        "flag",
        "1",
        "socket(AF_INET, SOCK_RAW, IPPROTO_ICMP): 1 refused, 0 done.",
    ),
)
BY_NAME = {p.name: p for p in PROBES}
GROUPS = tuple(dict.fromkeys(p.group for p in PROBES))


@dataclass
class Answer:
    """What one probe group gave: readings by name, and why each missing one is missing."""

    readings: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def read(self, name: str, value: float | bool | None, why_not: str = "") -> None:
        if value is None:
            self.missing[name] = why_not or "the probe gave no reading"
        else:
            self.readings[name] = float(value)


# -- the scripts -----------------------------------------------------------------------------
# Each runs as `python3 -I -c SCRIPT` and prints one JSON object. Standard library only.

_READ = """
def read(path, size=4096):
    try:
        with open(path, errors="replace") as f:
            return f.read(size).strip()
    except OSError:
        return None
"""

RESOURCES = (
    "import json, os\n"
    + _READ
    + """
total = None
for line in (read("/proc/meminfo", 65536) or "").splitlines():
    if line.startswith("MemTotal:"):
        total = int(line.split()[1])
print(json.dumps({
    "cpu_count": os.cpu_count(),
    "affinity": len(os.sched_getaffinity(0)),
    "mem_total_kib": total,
    "cpu_max": read("/sys/fs/cgroup/cpu.max"),
    "cfs_quota_us": read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
    "cfs_period_us": read("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
    "memory_max": read("/sys/fs/cgroup/memory.max"),
    "memory_limit_in_bytes": read("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
}))
"""
)

CPU_BURN = """
import json, os, time
WORKERS, SECONDS = {workers}, {seconds}
start, before = time.monotonic(), os.times()
pids = []
for _ in range(WORKERS):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            pass
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
wall, after = time.monotonic() - start, os.times()
cpu = after.children_user - before.children_user
cpu += after.children_system - before.children_system
print(json.dumps({{"workers": WORKERS, "cpu_seconds": cpu, "wall_seconds": wall}}))
"""

# The child raises its own OOM score, so the OOM killer takes it and not the sandbox's init.
MEMORY = """
import json, os, select, time
TARGET, STEP, LIMIT = {target}, {step}, {limit}
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    held, got = [], 0
    try:
        while got < TARGET:
            chunk = bytearray(STEP << 20)
            chunk[::4096] = b"\\1" * ((STEP << 20) // 4096)
            held.append(chunk)
            got += STEP
            os.write(w, b"%d\\n" % got)
    except MemoryError:
        os._exit(3)
    os._exit(0)
os.close(w)
out, deadline, timed_out = b"", time.monotonic() + LIMIT, False
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        timed_out = True
        os.kill(pid, 9)
        break
    if select.select([r], [], [], left)[0]:
        data = os.read(r, 4096)
        if not data:
            break
        out += data
_, status = os.waitpid(pid, 0)
while True:
    data = os.read(r, 4096)
    if not data:
        break
    out += data
steps = out.split()
if timed_out:
    end = "timeout"
elif os.WIFSIGNALED(status):
    end = "signal %d" % os.WTERMSIG(status)
else:
    end = "exit %d" % os.WEXITSTATUS(status)
allocated = int(steps[-1]) if steps else 0
print(json.dumps({{"target_mib": TARGET, "allocated_mib": allocated, "end": end}}))
"""

KERNEL = """
import json, os
with open("/proc/sys/kernel/random/boot_id") as f:
    boot_id = f.read(64).strip()
print(json.dumps({"boot_id": boot_id, "release": os.uname().release}))
"""

VIRT = (
    "import json, os, shutil, subprocess\n"
    + _READ
    + """
flags = next((l for l in (read("/proc/cpuinfo", 1 << 20) or "").splitlines()
              if l.startswith("flags")), None)
detect = None
tool = shutil.which("systemd-detect-virt")
if tool:
    try:
        done = subprocess.run([tool], capture_output=True, text=True, timeout=5)
        detect = done.stdout.strip()[:64]
    except (OSError, subprocess.SubprocessError) as exc:
        detect = "error: %s" % exc
print(json.dumps({
    "cpuinfo_flags": None if flags is None else "hypervisor" in flags.split(),
    "sys_hypervisor_type": read("/sys/hypervisor/type", 64),
    "dockerenv": os.path.exists("/.dockerenv"),
    "containerenv": os.path.exists("/run/.containerenv"),
    "cgroup": read("/proc/self/cgroup", 2048),
    "proc_version": read("/proc/version", 256),
    "systemd_detect_virt": detect,
}))
"""
)

EGRESS = (
    "import errno, json, socket\n"
    + _READ
    + """
lines = (read("/proc/net/dev", 65536) or "").splitlines()[2:]
interfaces = [l.split(":")[0].strip() for l in lines]
routes = read("/proc/net/route", 65536)
default = None if routes is None else any(
    len(f) > 2 and f[1] == "00000000" for f in (l.split() for l in routes.splitlines()[1:]))
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout({timeout})
        s.connect(({host!r}, {port}))
        result = "connected"
    finally:
        s.close()
except socket.timeout:
    result = "timeout"
except OSError as exc:
    result = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps({{"interfaces": interfaces, "default_route": default, "result": result}}))
"""
)

# Each operation runs in a child of its own, so what it changes (a namespace, a mount, a keyring,
# a tracee) goes with the child; its exit code is 0 for success or the errno, 255 a crash.
OPERATIONS_SCRIPT = """
import ctypes, errno, json, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {{"x86_64": {{"keyctl": 250, "bpf": 321, "finit_module": 313}},
      "aarch64": {{"keyctl": 219, "bpf": 280, "finit_module": 273}}}}.get(os.uname().machine)

def check(rc):
    if rc < 0:
        os._exit(ctypes.get_errno() or 255)
    return rc

def mount():
    path = "/tmp/.boxbench-mount-%d" % os.getpid()
    os.mkdir(path)
    try:
        rc = libc.mount(b"none", path.encode(), b"tmpfs", 0, None)
        err = ctypes.get_errno()
        if rc == 0:
            libc.umount2(path.encode(), 2)
    finally:
        os.rmdir(path)
    if rc < 0:
        os._exit(err or 255)

def unshare_user():
    check(libc.unshare(0x10000000))

def ptrace():
    check(libc.ptrace(16, SIBLING, None, None))
    libc.ptrace(17, SIBLING, None, None)

def keyctl():
    check(libc.syscall(NR["keyctl"], 0, -3, 1))

def bpf():
    attr = (ctypes.c_uint32 * 30)(2, 4, 4, 1)
    os.close(check(libc.syscall(NR["bpf"], 0, ctypes.byref(attr), ctypes.sizeof(attr))))

def module():
    path = "/tmp/.boxbench-module-%d" % os.getpid()
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o600)
    os.unlink(path)
    check(libc.syscall(NR["finit_module"], fd, b"", 0))

def raw_socket():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    except OSError as exc:
        os._exit(exc.errno or 255)

SIBLING = os.fork()
if SIBLING == 0:
    time.sleep({limit} * 8)
    os._exit(0)
answers = {{}}
for name in {operations!r}:
    if NR is None and name in ("keyctl", "bpf", "module"):
        answers[name] = "unknown machine %s" % os.uname().machine
        continue
    pid = os.fork()
    if pid == 0:
        try:
            globals()[name]()
            os._exit(0)
        except BaseException:
            os._exit(255)
    deadline = time.monotonic() + {limit}
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFEXITED(status):
                answers[name] = os.WEXITSTATUS(status)
            else:
                answers[name] = "signal %d" % os.WTERMSIG(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            answers[name] = "timeout"
            break
        time.sleep(0.01)
os.kill(SIBLING, 9)
os.waitpid(SIBLING, 0)
print(json.dumps(answers))
"""


def scripts(cpus: int, memory_mib: int) -> dict[str, str]:
    """Each probe group's script for a sandbox asked for `cpus` and `memory_mib`."""
    host, port = EGRESS_ADDRESS
    target = math.ceil(memory_mib * ALLOCATION_HEADROOM / ALLOCATION_STEP_MIB)
    return {
        "resources": RESOURCES,
        "cpu_burn": CPU_BURN.format(workers=2 * cpus, seconds=BURN_SECONDS),
        "memory": MEMORY.format(
            target=target * ALLOCATION_STEP_MIB, step=ALLOCATION_STEP_MIB, limit=ALLOCATION_LIMIT_S
        ),
        "kernel": KERNEL,
        "virt": VIRT,
        "egress": EGRESS.format(timeout=EGRESS_TIMEOUT_S, host=host, port=port),
        "operations": OPERATIONS_SCRIPT.format(operations=OPERATIONS, limit=OPERATION_LIMIT_S),
    }


# -- reading the answers -------------------------------------------------------------------------


def decode(group: str, stdout: bytes) -> dict:
    """The one JSON object a script printed, or ProbeError."""
    if len(stdout) > SCRIPT_LIMIT:
        raise ProbeError(f"probe {group}: answer of {len(stdout)} bytes, over {SCRIPT_LIMIT}")
    try:
        data = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProbeError(f"probe {group}: not one JSON object ({exc}): {stdout[:200]!r}") from None
    if not isinstance(data, dict):
        raise ProbeError(f"probe {group}: answered {type(data).__name__}, not an object")
    return data


def _field(group: str, data: dict, key: str, kinds: tuple, optional: bool = False):
    value = data.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) and bool not in kinds:
        value = object()  # JSON true is not a number here
    if not isinstance(value, kinds):
        raise ProbeError(f"probe {group}: {key} is {data.get(key)!r}, not {_names(kinds)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ProbeError(f"probe {group}: {key} is {value!r}, not a finite number")
    return value


def _names(kinds: tuple) -> str:
    return " or ".join(k.__name__ for k in kinds)


def _maybe_count(group: str, data: dict, key: str, high: float) -> float | None:
    value = _field(group, data, key, (int, float), optional=True)
    if value is not None and not 0 <= value <= high:
        raise ProbeError(f"probe {group}: {key} is {value!r}, outside 0 to {high:g}")
    return value


def _count(group: str, data: dict, key: str, high: float) -> float:
    value = _maybe_count(group, data, key, high)
    if value is None:
        raise ProbeError(f"probe {group}: {key} is None, not int or float")
    return value


def read_resources(data: dict) -> Answer:
    g, answer = "resources", Answer()
    answer.read("cpus_visible", _maybe_count(g, data, "cpu_count", 1 << 16))
    answer.read("cpus_affinity", _count(g, data, "affinity", 1 << 16))
    kib = _maybe_count(g, data, "mem_total_kib", 1 << 50)
    answer.read("memory_visible_mib", None if kib is None else kib / 1024, "no MemTotal")
    quota, why = cpu_quota(
        _field(g, data, "cpu_max", (str,), True),
        _field(g, data, "cfs_quota_us", (str,), True),
        _field(g, data, "cfs_period_us", (str,), True),
    )
    answer.read("cpus_quota", quota, why)
    limit, why = memory_limit(
        _field(g, data, "memory_max", (str,), True),
        _field(g, data, "memory_limit_in_bytes", (str,), True),
    )
    answer.read("memory_limit_mib", limit, why)
    return answer


def _number(group: str, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ProbeError(f"probe {group}: {what} is {text[:80]!r}, not a whole number") from None


def cpu_quota(cpu_max, cfs_quota, cfs_period) -> tuple[float | None, str]:
    """CPUs of the cgroup's quota (v2 cpu.max "quota period", or v1 quota and period)."""
    if cpu_max is not None:
        parts = cpu_max.split()
        if len(parts) != 2:
            raise ProbeError(f"probe resources: cpu.max is {cpu_max[:80]!r}, not 'quota period'")
        if parts[0] == "max":
            return None, "cpu.max sets no quota (max)"
        quota, period = (_number("resources", p, "cpu.max") for p in parts)
    elif cfs_quota is not None and cfs_period is not None:
        quota = _number("resources", cfs_quota, "cpu.cfs_quota_us")
        period = _number("resources", cfs_period, "cpu.cfs_period_us")
        if quota < 0:
            return None, "cpu.cfs_quota_us sets no quota (-1)"
    else:
        return None, "no cgroup CPU file is visible inside the sandbox"
    if period <= 0 or quota <= 0:
        raise ProbeError(f"probe resources: CPU quota {quota} over period {period}")
    return quota / period, ""


def memory_limit(memory_max, limit_in_bytes) -> tuple[float | None, str]:
    """MiB of the cgroup's memory limit (v2 memory.max, or v1 memory.limit_in_bytes)."""
    text = memory_max if memory_max is not None else limit_in_bytes
    if text is None:
        return None, "no cgroup memory file is visible inside the sandbox"
    if text == "max":
        return None, "memory.max sets no limit (max)"
    limit = _number("resources", text, "the memory limit")
    if limit < 0:
        raise ProbeError(f"probe resources: memory limit {limit}")
    if limit >= NO_LIMIT_BYTES:
        return None, "memory.limit_in_bytes sets no limit"
    return limit / (1 << 20), ""


def read_cpu_burn(data: dict, cpus: int) -> Answer:
    g, answer = "cpu_burn", Answer()
    workers = _count(g, data, "workers", 1 << 16)
    cpu = _count(g, data, "cpu_seconds", 1e6)
    wall = _count(g, data, "wall_seconds", 1e6)
    if workers != 2 * cpus:
        raise ProbeError(f"probe {g}: ran {workers} workers, not {2 * cpus}")
    if wall < BURN_SECONDS:
        raise ProbeError(f"probe {g}: lasted {wall:g} s, under its {BURN_SECONDS:g} s")
    answer.read("cpus_enforced", cpu / wall)
    return answer


def read_memory(data: dict, memory_mib: int) -> Answer:
    g, answer = "memory", Answer()
    target = _count(g, data, "target_mib", 1 << 40)
    allocated = _count(g, data, "allocated_mib", target)
    end = _field(g, data, "end", (str,))
    if target < memory_mib * ALLOCATION_HEADROOM:
        raise ProbeError(f"probe {g}: target {target:g} MiB is under 125 % of {memory_mib}")
    if end == "timeout":
        why = f"the allocation was still running after {ALLOCATION_LIMIT_S} s (swapping?)"
        answer.read("memory_enforced_mib", None, why)
        answer.read("memory_limit_holds", None, why)
        return answer
    if end not in ("exit 0", "exit 3") and not end.startswith("signal "):
        raise ProbeError(f"probe {g}: the allocating child ended {end[:40]!r}")
    if end == "exit 0" and allocated < target:
        raise ProbeError(f"probe {g}: exited 0 after {allocated:g} of {target:g} MiB")
    answer.read("memory_enforced_mib", allocated)
    answer.read("memory_limit_holds", allocated < target)
    return answer


def read_kernel(data: dict, host_boot_id: str) -> Answer:
    g = "kernel"
    boot_id = _field(g, data, "boot_id", (str,))
    if not host_boot_id:
        return Answer(missing={"kernel_shared": "the job host's boot_id cannot be read"})
    if not boot_id:
        return Answer(missing={"kernel_shared": "the sandbox shows an empty boot_id"})
    return Answer({"kernel_shared": float(boot_id == host_boot_id)})


CONTAINER_CGROUP_WORDS = ("docker", "libpod", "containerd", "kubepods", "lxc")


def read_virt(data: dict) -> Answer:
    g, answer = "virt", Answer()
    flag = _field(g, data, "cpuinfo_flags", (bool,), optional=True)
    answer.read("virt_hypervisor_flag", flag, "no flags line in /proc/cpuinfo (not x86?)")
    kind = _field(g, data, "sys_hypervisor_type", (str,), optional=True)
    answer.read("virt_sys_hypervisor", bool(kind))
    docker = _field(g, data, "dockerenv", (bool,))
    podman = _field(g, data, "containerenv", (bool,))
    answer.read("runtime_container_file", docker or podman)
    cgroup = _field(g, data, "cgroup", (str,), optional=True)
    named = None if cgroup is None else any(w in cgroup for w in CONTAINER_CGROUP_WORDS)
    answer.read("runtime_cgroup_named", named, "/proc/self/cgroup cannot be read")
    return answer


def read_egress(data: dict) -> Answer:
    g, answer = "egress", Answer()
    interfaces = _field(g, data, "interfaces", (list,))
    if not all(isinstance(i, str) for i in interfaces):
        raise ProbeError(f"probe {g}: interfaces is {interfaces[:5]!r}, not a list of names")
    route = _field(g, data, "default_route", (bool,), optional=True)
    result = _field(g, data, "result", (str,))
    code = egress_code(result, [i for i in interfaces if i and i != "lo"], route)
    answer.read("egress_result", code)
    opened = {EGRESS_CONNECTED: 1, EGRESS_NO_NETWORK: 0, EGRESS_POLICY: 0}.get(code)
    answer.read("egress_open", opened, f"cannot tell: {EGRESS_WORDS[code]} ({result[:40]})")
    return answer


def egress_code(result: str, interfaces: list[str], default_route: bool | None) -> int:
    """The egress answer as a code (EGRESS_WORDS): a connect that failed inside a sandbox with
    no way out is the sandbox's block, whatever the error said."""
    if result == "connected":
        return EGRESS_CONNECTED
    if not interfaces or default_route is False:
        return EGRESS_NO_NETWORK
    if result in ("EPERM", "EACCES"):
        return EGRESS_POLICY
    if result == "timeout":
        return EGRESS_NO_ANSWER
    if result in ("ENETUNREACH", "EHOSTUNREACH", "ENETDOWN"):
        return EGRESS_UNREACHABLE
    if result == "ECONNREFUSED":
        return EGRESS_REFUSED
    return EGRESS_OTHER


def read_operations(data: dict) -> Answer:
    g, answer = "operations", Answer()
    unknown = sorted(set(data) - set(OPERATIONS))
    if unknown:
        raise ProbeError(f"probe {g}: answered for unknown operations {unknown[:5]}")
    for operation in OPERATIONS:
        value = _field(g, data, operation, (int, str))
        refused, why = classify_operation(operation, value)
        answer.read(f"refused_{operation}", refused, why)
    return answer


def classify_operation(operation: str, answer: int | str) -> tuple[int | None, str]:
    """(1 refused / 0 allowed / None, why not) from an operation's errno (0: it succeeded)."""
    if isinstance(answer, str):
        return None, f"the operation could not run: {answer[:80]}"
    if not 0 <= answer <= 255:
        raise ProbeError(f"probe operations: {operation} answered {answer}, not an exit code")
    if answer == 0 or answer in ALLOWED_ALSO.get(operation, ()):
        return 0, ""
    if answer in REFUSALS or answer in REFUSED_ALSO.get(operation, ()):
        return 1, ""
    if answer == 255:
        return None, "the probe's own code failed in the sandbox"
    name = errno.errorcode.get(answer, str(answer))
    return None, f"answered {name}: neither a refusal nor a success"
