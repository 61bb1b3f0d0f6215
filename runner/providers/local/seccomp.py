"""The seccomp filter of every `local` sandbox, built with libseccomp (through pyseccomp).

Modelled on Docker's default profile: the system calls that profile refuses a container without
extra capabilities are refused here with EPERM (new namespaces, mounts, keyrings, BPF,
performance counters, userfaultfd, io_uring, kernel modules, kexec, clocks, swap, reboot, quota,
file handles, NUMA policy, accounting). So are ptrace and process_vm_readv/writev, which that
profile allows: a sandbox's commands share one user, and none may reach another's memory (a
replay's sealer, runner/traces/guard.py). Everything else is allowed, so the host toolchain runs
as it does in a container. Docker's profile is an allow list; a deny list of the same refusals
keeps working when the kernel adds a harmless call the list does not know yet.

clone3 answers ENOSYS as in Docker's profile: its flags live in memory the filter cannot read,
so the C library falls back to clone, whose namespace flags the filter can see. The 32-bit and
x32 ABIs get the same rules, so `int 0x80` is no way around them.

Built once per process and handed to bubblewrap as a compiled BPF program (`--seccomp FD`).
"""

from __future__ import annotations

import errno
import functools
import os
import platform

from runner.providers.base import ProviderError
from runner.providers.seccomp_rules import NAMESPACE_FLAGS, REFUSED


@functools.cache
def compiled_filter() -> bytes:
    """The BPF program; ProviderError naming what is missing when libseccomp is not there."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:
        raise ProviderError(
            f"cannot build the seccomp filter: libseccomp is missing ({exc}); "
            "apt-get install libseccomp2",
            operation="create",
            code="missing_tool",
        ) from None
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    if platform.machine() == "x86_64":
        rules.add_arch(seccomp.Arch.X86)
        rules.add_arch(seccomp.Arch.X32)
    for name in REFUSED:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in NAMESPACE_FLAGS:
        flag_set = seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag)
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", flag_set)
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    memory = os.memfd_create("boxbench-seccomp")
    try:
        with open(memory, "wb", closefd=False) as out:
            rules.export_bpf(out)
        os.lseek(memory, 0, os.SEEK_SET)
        return os.read(memory, 1 << 20)
    finally:
        os.close(memory)


def filter_fd() -> int:
    """A new descriptor holding the program from its start, for bubblewrap's --seccomp."""
    program = compiled_filter()
    memory = os.memfd_create("boxbench-seccomp")
    os.write(memory, program)
    os.lseek(memory, 0, os.SEEK_SET)
    return memory
