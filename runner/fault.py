"""Whose fault a failure is, where the exception alone does not say (pure; no Django).

A command inside the sandbox that ends by a signal the benchmark did not send was killed from
outside the benchmark: by another process (`kill -9`), the OOM killer (SIGKILL), or a resource
limit (SIGXCPU, SIGXFSZ). That is the provider's failure, with the signal as its cause, not a
benchmark error. A crash signal (SIGSEGV, SIGABRT, SIGILL, SIGFPE, SIGBUS) stays the program's
own fault.

Every benchmark error stops its unit on that provider for the rest of the run (`stops_unit`). A
failure of the job host itself (out of memory, file descriptors, threads or disk) is not a defect
of the benchmark: it is recorded with owner "environment", and stops the unit all the same, since
a refill would retry on the same host.
"""

from __future__ import annotations

import errno
import signal

from runner.outcomes import Outcome

# Signals that come from outside a program: a kill, a terminal or session ending, a limit.
EXTERNAL_SIGNALS = frozenset(
    {
        signal.SIGKILL,
        signal.SIGTERM,
        signal.SIGHUP,
        signal.SIGINT,
        signal.SIGQUIT,
        signal.SIGXCPU,
        signal.SIGXFSZ,
    }
)
# errno values meaning the job host ran out of a resource, not that our code is wrong.
HOST_EXHAUSTED = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC, errno.EAGAIN, errno.EDQUOT}
)


def signal_of(exit_code: int) -> signal.Signals | None:
    """The signal that ended a command, from its exit status: -N when the exec transport reports
    death by signal N (a spawner, `subprocess`), 128+N as a shell reports it."""
    number = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else 0
    try:
        return signal.Signals(number) if number else None
    except ValueError:
        return None


def killed_from_outside(exit_code: int, sent: tuple[int, ...] = ()) -> str | None:
    """Why a command's exit status means it was killed from outside the benchmark, or None.

    `sent`: signals the benchmark sends its own commands (BenchmarkDefinition.sends_signals).
    """
    sig = signal_of(exit_code)
    if sig is None or sig not in EXTERNAL_SIGNALS or sig in sent:
        return None
    why = (
        "killed from outside the benchmark or by the OOM killer"
        if sig == signal.SIGKILL
        else "a signal the benchmark did not send"
    )
    return f"a command in the sandbox was ended by {sig.name} (exit status {exit_code}): {why}"


def host_failure(error: BaseException) -> str | None:
    """Why `error` is the job host running out of something, or None when it is a defect."""
    if isinstance(error, MemoryError):
        return "the job host ran out of memory"
    if isinstance(error, OSError) and error.errno in HOST_EXHAUSTED:
        return f"the job host ran out of a resource: {error.strerror or error}"
    if isinstance(error, RuntimeError) and "can't start new thread" in str(error):
        return "the job host cannot start another thread"
    return None


def stops_unit(outcome: str, owner: str) -> bool:
    """Every benchmark error stops its unit on that provider for the rest of the run, as the
    methodology says, the job host's running out of a resource (owner `environment`) included:
    it is not the provider's fault either, and refilling it would retry on the same host."""
    return outcome == Outcome.BENCHMARK_ERROR
