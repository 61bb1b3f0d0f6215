"""The DeepSWE exclusion rules a new session is screened by before it becomes a trace unit.

Spec (deepswe.txt): candidate traces exclude tasks needing GPUs or custom kernel modules, tasks
over 4 GiB peak RAM and non-deterministic test suites (network calls, wall-clock sleeps), and
the traces exclude sessions that walk / with find, background jobs and 30 s timeouts.

What a command line shows is screened here before anything runs (`screen_commands`); a timeout
shows only once the session is recorded (`screen_recording`: exit 124 or 137). The rest is
enforced by the recording itself: it runs in a 4 GiB sandbox, behind the deny-all proxy (a
network call fails), and is replayed once more to verify it (a suite that does not repeat
fails). Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
import shlex

# Exit codes of a command stopped by `timeout` (124) or killed after it (137).
TIMEOUT_CODES = {124, 137}
GPU_PROGRAMS = {"nvidia-smi", "nvcc", "rocm-smi"}
KERNEL_MODULE_PROGRAMS = {"insmod", "modprobe", "rmmod"}
BACKGROUND_PROGRAMS = {"nohup", "setsid", "disown"}
CUDA = re.compile(r"\bcuda\b", re.IGNORECASE)
SEPARATORS = {"&&", "||", ";", "|", "(", ")", "\n", "&"}


def screen_commands(commands: list[str]) -> list[str]:
    """Why each excluded command of a session is excluded: "command N: reason" (0-based)."""
    problems = []
    for index, command in enumerate(commands):
        reason = _command_reason(command)
        if reason:
            problems.append(f"command {index} ({_short(command)}): {reason}")
    return problems


def screen_recording(exit_codes: list[int], commands: list[str]) -> list[str]:
    """The commands that timed out when the session was recorded."""
    return [
        f"command {index} ({_short(command)}): timed out (exit {code})"
        for index, (code, command) in enumerate(zip(exit_codes, commands, strict=True))
        if code in TIMEOUT_CODES
    ]


def _command_reason(command: str) -> str | None:
    tokens = _tokens(command)
    if "&" in tokens:
        return "runs a background job (&)"
    for words in _simple_commands(tokens):
        program = words[0].rsplit("/", 1)[-1]
        if program in BACKGROUND_PROGRAMS:
            return f"runs a background job ({program})"
        if program == "find" and "/" in words[1:]:
            return "walks / with find"
        if program in GPU_PROGRAMS:
            return f"needs a GPU ({program})"
        if program in KERNEL_MODULE_PROGRAMS:
            return f"loads a kernel module ({program})"
        if program == "sleep":
            return "sleeps on the wall clock"
    if CUDA.search(command):
        return "needs a GPU (CUDA)"
    return None


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace = " \t\r"  # newlines separate commands
    lexer.wordchars += "$`{}[]!*?~-./=:,%+@^#"
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: whitespace words still show the programs
        return command.replace("\n", " \n ").split()


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for token in tokens:
        if token in SEPARATORS:
            groups.append([])
        else:
            groups[-1].append(token)
    return [_without_prefixes(g) for g in groups if _without_prefixes(g)]


def _without_prefixes(words: list[str]) -> list[str]:
    """Drop assignments and wrappers (`env X=1`, `timeout 60`, `sudo`) before the program."""
    while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in {"sudo", "env"}):
        words = words[1:]
    if words and words[0] == "timeout" and len(words) > 2:
        words = words[2:]
    return words


def _short(command: str) -> str:
    line = command.strip().splitlines()[0] if command.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."
