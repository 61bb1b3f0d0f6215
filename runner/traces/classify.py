"""The DeepSWE stage classifier: which of five stages a shell command belongs to.

A deterministic command-string parser (spec: deepswe.txt, "Metrics"). Every command lands in
exactly one stage, decided in priority order Test -> Install -> Build -> Write -> Read:

- Test: test runners (pytest, make test, a test file run by python...), whatever else the line
  does; and inline verification (python -c, a python script fed by a heredoc, node -e), unless
  the command line mutates files or redirects into one. Any other script file is Read.
- Install: package managers (pip, conda, poetry, uv, npm, yarn, pnpm, cargo install, apt-get, apk).
- Build: compilers, build tools, linters, and git commit/merge/rebase/cherry-pick.
- Write: file creation and mutation (sed -i, patch, git apply/checkout/..., mkdir, mv, cp, rm,
  heredocs into files, redirects into files, python -c scripts that write or remove files).
- Read: everything else (navigation, search, read-only inspection).

docs/traces.md lists every rule with examples. Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

TEST, INSTALL, BUILD, WRITE, READ = "Test", "Install", "Build", "Write", "Read"
# Internal marks, resolved by `classify` into the five stages: verification that is not a test
# runner (Test only on a command line without any file write), and a test runner's output
# written to a file by a redirect or `tee` (no mutation of the repository; Write without a runner).
VERIFY, CAPTURE = "verify", "capture"
PRIORITY = (TEST, INSTALL, BUILD, WRITE, READ)
# The stacked bar's order (spec: "Read, Write, Install, Build, Test").
STAGES = (READ, WRITE, INSTALL, BUILD, TEST)

TEST_RUNNERS = {"pytest", "py.test", "tox", "nox", "nosetests", "jest", "vitest", "ctest", "trial"}
PYTHON_TEST_MODULES = {"pytest", "unittest", "nose", "nose2", "doctest", "tox", "nox"}
PACKAGE_MANAGERS = {
    "pip",
    "pip3",
    "pipx",
    "conda",
    "mamba",
    "micromamba",
    "poetry",
    "uv",
    "pipenv",
    "pdm",
    "npm",
    "yarn",
    "pnpm",
    "apt-get",
    "apt",
    "apk",
    "dpkg",
    "gem",
    "bundle",
    "easy_install",
    "virtualenv",
}
COMPILERS = {
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "rustc",
    "javac",
    "tsc",
    "make",
    "gmake",
    "cmake",
    "ninja",
    "meson",
    "bazel",
    "mvn",
    "gradle",
    "ld",
    "ar",
    "as",
    "cython",
    "configure",
    "autoreconf",
    "maturin",
}
LINTERS = {
    "ruff",
    "flake8",
    "black",
    "isort",
    "mypy",
    "pylint",
    "eslint",
    "pyflakes",
    "pycodestyle",
    "pyright",
    "prettier",
    "shellcheck",
    "clang-format",
    "rustfmt",
    "gofmt",
}
PYTHON_BUILD_MODULES = {"build", "compileall", "py_compile", "cython"} | LINTERS
PYTHON_INSTALL_MODULES = {"pip", "venv", "virtualenv", "ensurepip", "pipx"}
GIT_BUILD = {"commit", "merge", "rebase", "cherry-pick", "revert"}
GIT_WRITE = {
    "apply",
    "checkout",
    "reset",
    "restore",
    "clean",
    "stash",
    "switch",
    "add",
    "rm",
    "mv",
    "init",
    "am",
    "config",
    "tag",
}
WRITE_COMMANDS = {
    "apply_patch",
    "patch",
    "mkdir",
    "mv",
    "cp",
    "rm",
    "rmdir",
    "ln",
    "chmod",
    "chown",
    "touch",
    "truncate",
    "install",
    "unzip",
    "dd",
    "shred",
    "rsync",
}
# Programs that run another command given after their own options.
WRAPPERS = {"sudo", "time", "nice", "nohup", "env", "timeout", "stdbuf", "command", "exec", "xargs"}
# Reserved words that can open a simple command: in `for f in *.c; do gcc ...; done` the
# program is gcc, not `do`.
SHELL_KEYWORDS = {"do", "then", "else", "elif", "if", "while", "until", "!"}
RUNNER_PREFIXES = {"uv": "run", "poetry": "run", "pdm": "run", "pipenv": "run", "hatch": "run"}
SHELLS = {"bash", "sh", "zsh", "dash"}
PYTHONS = re.compile(r"^(python|python3|python3\.\d+|pypy3?)$")
NODE = {"node", "deno", "bun"}
NOT_A_FILE = re.compile(r"^(/dev/(null|stdout|stderr|tty|fd/\d+)|&-?\d*-?)$")
# A python script that is a test: test_x.py, x_test.py, tests.py, runtests.py, run_tests.py, or
# any file under a test/ or tests/ directory.
TEST_SCRIPT = re.compile(
    r"(^|/)(tests?/.*|test_[^/]*\.py|[^/]*_tests?\.py|tests\.py|run_?tests\.py|runtests\.py)$"
)
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_.-]*)\2")
REDIRECT_OPS = {">", ">>", ">|", "&>", "&>>", ">&", "&>|"}
SEPARATORS = {"&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "{", "}", "\n", "`", "$("}
# Python calls that create, change or remove files (an inline script that calls one is Write).
PY_MUTATION = re.compile(
    r"\b(os\.(remove|unlink|rename|renames|replace|makedirs|mkdir|rmdir|removedirs|symlink|link"
    r"|truncate|chmod|utime)|shutil\.\w+)\s*\("
    r"|\.(write_text|write_bytes|unlink|mkdir|rmdir|touch|rename|symlink_to|hardlink_to)\s*\("
)
PY_OPEN = re.compile(r"\b(?:io\.|codecs\.|gzip\.|bz2\.|lzma\.)?open\s*\(")


@dataclass
class _Line:
    """A command line with its heredoc bodies taken out (each paired with its delimiter)."""

    text: str
    bodies: list[str] = field(default_factory=list)


def classify(command: str) -> str:
    """The stage of one shell command (possibly spanning lines, with heredocs)."""
    found = _stages(command, depth=0)
    # The spec's "when they are not combined with file-mutation operators" qualifies inline
    # verification only: a test runner is Test by the priority order whatever else the line does.
    if VERIFY in found and not found & {WRITE, CAPTURE}:
        found.add(TEST)  # inline verification, not combined with any file write
    if CAPTURE in found and TEST not in found:
        found.add(WRITE)  # `tee` into a file with no test run to capture: a file write
    for stage in PRIORITY:
        if stage in found:
            return stage
    return READ


def classify_all(commands: list[str]) -> list[str]:
    return [classify(c) for c in commands]


def _stages(command: str, depth: int) -> set[str]:
    if depth > 4:  # bash -c "bash -c ..." nesting is never this deep in a real session
        return set()
    line = _split_heredocs(command)
    found: set[str] = set()
    bodies = list(line.bodies)
    for segment in _segments(line.text):
        found |= _segment_stages(segment, bodies, depth)
    return found


def _split_heredocs(command: str) -> _Line:
    """Remove heredoc bodies from the command text, keeping them in order of appearance."""
    out_lines: list[str] = []
    bodies: list[str] = []
    lines = command.split("\n")
    i = 0
    while i < len(lines):
        text = lines[i]
        out_lines.append(text)
        i += 1
        for match in HEREDOC.finditer(_without_here_strings(text)):
            strip_tabs, delimiter = match.group(1) == "-", match.group(3)
            body: list[str] = []
            while i < len(lines):
                candidate = lines[i].lstrip("\t") if strip_tabs else lines[i]
                i += 1
                if candidate.rstrip() == delimiter:
                    break
                body.append(lines[i - 1])
            bodies.append("\n".join(body))
    return _Line("\n".join(out_lines), bodies)


def _without_here_strings(text: str) -> str:
    return text.replace("<<<", "   ")


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace = " \t\r"  # keep newlines: they separate commands
    lexer.wordchars += "$`{}[]!*?~-./=:,%+@^#"
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        # Unbalanced quotes: fall back to whitespace words so a broken line still classifies.
        tokens = text.replace("\n", " \n ").split(" ")
    return [t for t in tokens if t != ""]


def _segments(text: str) -> list[list[str]]:
    """Simple commands of a command line: tokens split at ; && || | & ( ) and newlines."""
    segments: list[list[str]] = []
    current: list[str] = []
    for token in _tokens(text):
        if token in SEPARATORS or (set(token) <= set(";&|()") and token not in REDIRECT_OPS):
            if current:
                segments.append(current)
            current = []
            continue
        current.append(token)
    if current:
        segments.append(current)
    return segments


def _segment_stages(tokens: list[str], bodies: list[str], depth: int) -> set[str]:
    """Stages of one simple command; consumes the heredoc bodies this command reads."""
    redirected = False
    words: list[str] = []
    heredoc_bodies: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in REDIRECT_OPS or re.fullmatch(r"\d+(>|>>|>\||>&)", token):
            target = tokens[i + 1] if i + 1 < len(tokens) else ""
            if token.endswith("&") and target.isdigit():
                target = "&" + target
            if not NOT_A_FILE.match(target):
                redirected = True
            if words and words[-1].isdigit():
                words.pop()  # the file descriptor of `2>`, split off by the tokenizer
            i += 2
            continue
        if token in ("<<", "<<-"):
            if bodies:
                heredoc_bodies.append(bodies.pop(0))
            i += 2
            continue
        if token in ("<", "<<<", "<&", "<>"):
            i += 2
            continue
        words.append(token)
        i += 1
    found = _program_stages(words, heredoc_bodies, depth)
    if redirected:
        # A test runner's output redirected to a log captures the run; any other redirect
        # into a file writes that file.
        found.add(CAPTURE if TEST in found else WRITE)
    return found


def _program(words: list[str]) -> str:
    return words[0].rsplit("/", 1)[-1] if words else ""


def _strip_prefixes(words: list[str]) -> list[str]:
    """Drop assignments, shell reserved words and wrappers (env X=1, do, timeout 60, xargs...)."""
    while words:
        name = _program(words)
        if ASSIGNMENT.match(words[0]) or words[0] in SHELL_KEYWORDS:
            words = words[1:]
        elif name in WRAPPERS:
            rest = words[1:]
            while rest and (rest[0].startswith("-") or ASSIGNMENT.match(rest[0])):
                option = rest[0]
                rest = rest[1:]
                if name in ("timeout", "xargs", "nice") and option in ("-s", "-k", "-n", "-I"):
                    rest = rest[1:]
            if name == "timeout" and rest:
                rest = rest[1:]  # the duration
            words = rest
        elif name in RUNNER_PREFIXES and len(words) > 1 and words[1] == RUNNER_PREFIXES[name]:
            words = words[2:]
        elif name in ("npx", "pnpx"):
            words = [w for w in words[1:] if not w.startswith("-")] or []
        else:
            return words
    return words


def _program_stages(words: list[str], heredoc_bodies: list[str], depth: int) -> set[str]:
    words = _strip_prefixes(words)
    if not words:
        return set()
    name = _program(words)
    args = words[1:]
    sub = next((a for a in args if not a.startswith("-")), "")

    if name in SHELLS:
        return _shell_stages(args, heredoc_bodies, depth)
    if PYTHONS.match(name):
        return _python_stages(args, heredoc_bodies)
    if name in NODE:
        if "-e" in args or "--eval" in args or "-p" in args:
            return {VERIFY}
        return {READ}
    if name in TEST_RUNNERS:
        return {TEST}
    if name in ("cargo", "go"):
        return {_cargo_go_stage(name, sub)}
    if name in ("npm", "yarn", "pnpm", "bun"):
        return {_node_pm_stage(args, sub)}
    if name in PACKAGE_MANAGERS:
        return {INSTALL}
    if name in ("make", "gmake"):
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if any(t in ("test", "check", "tests", "test-all") for t in targets):
            return {TEST}
        if "install" in targets:
            return {INSTALL}
        return {BUILD}
    if name in COMPILERS or name in LINTERS:
        return {BUILD}
    if name == "git":
        return {_git_stage(args)}
    if name in ("sed", "perl"):
        in_place = any(re.match(r"^-[A-Za-z]*i", a) or a.startswith("--in-place") for a in args)
        return {WRITE} if in_place else {READ}
    if name == "tar":
        flags = args[0] if args else ""
        mode = flags.lstrip("-") if flags and not flags.startswith("--") else ""
        long_write = any(a in ("--extract", "--create", "--get", "--append") for a in args)
        return {WRITE} if long_write or set(mode) & set("xcru") else {READ}
    if name in WRITE_COMMANDS:
        return {WRITE}
    if name == "tee":
        if not [a for a in args if not a.startswith("-")]:
            return {READ}
        return {WRITE} if heredoc_bodies else {CAPTURE}
    if name == "find":
        return _find_stages(args, depth)
    if re.search(r"(^|[_-])tests?([_.-]|$)", name) and name.endswith((".sh", ".py")):
        return {TEST}
    return {READ}


def _shell_stages(args: list[str], heredoc_bodies: list[str], depth: int) -> set[str]:
    if "-c" in args:
        index = args.index("-c")
        if index + 1 < len(args):
            return _stages(args[index + 1], depth + 1)
        return set()
    if heredoc_bodies:
        found: set[str] = set()
        for body in heredoc_bodies:
            found |= _stages(body, depth + 1)
        return found
    script = next((a for a in args if not a.startswith("-")), "")
    if re.search(r"(^|[/_-])(run_)?tests?([_.-]|$)", script):
        return {TEST}
    return {READ}


def _python_stages(args: list[str], heredoc_bodies: list[str]) -> set[str]:
    """python -m X, python -c CODE, python - <<EOF, python setup.py ..., python script.py."""
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-m", "-c", "-"):
        i += 2 if args[i] in ("-W", "-X") else 1
    rest = args[i:]
    if not rest:
        if not heredoc_bodies:
            return {READ}  # python --version, python -V
        return {WRITE} if _python_writes("\n".join(heredoc_bodies)) else {VERIFY}
    if rest[0] == "-m" and len(rest) > 1:
        module = rest[1].split(".")[0]
        if module in PYTHON_TEST_MODULES:
            return {TEST}
        if module in PYTHON_INSTALL_MODULES:
            return {INSTALL}
        if module in PYTHON_BUILD_MODULES:
            return {BUILD}
        return {VERIFY}  # running a module of the repository or the library to check it
    if rest[0] == "-c":
        code = rest[1] if len(rest) > 1 else ""
        return {WRITE} if _python_writes(code) else {VERIFY}
    if rest[0] == "-":
        code = "\n".join(heredoc_bodies)
        return {WRITE} if _python_writes(code) else {VERIFY}
    script = rest[0].rsplit("/", 1)[-1]
    if script == "setup.py":
        verbs = set(rest[1:])
        if verbs & {"test", "pytest"}:
            return {TEST}
        if verbs & {"install", "develop"}:
            return {INSTALL}
        return {BUILD}
    # A script is classed by what it is: a test file or test-runner script is a test runner.
    # Any other script file is not inline verification (its code is not on the command line),
    # so it falls back to Read: `python scripts/gen.py` is no test.
    if TEST_SCRIPT.search(rest[0]):
        return {TEST}
    return {READ}


def _python_writes(code: str) -> bool:
    """Does an inline python script open a file for writing or change the file system?"""
    if PY_MUTATION.search(code):
        return True
    for match in PY_OPEN.finditer(code):
        call_args = _balanced_arguments(code, match.end())
        if _open_mode_writes(call_args):
            return True
    return False


def _balanced_arguments(code: str, start: int) -> list[str]:
    """Top-level comma-separated arguments of the call whose '(' ends just before `start`."""
    depth, quote, current, parts = 0, "", [], []
    for char in code[start:]:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
            continue
        if char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def _open_mode_writes(call_args: list[str]) -> bool:
    mode = ""
    for position, argument in enumerate(call_args):
        keyword = re.match(r"^mode\s*=\s*(.*)$", argument)
        if keyword:
            mode = keyword.group(1)
        elif position == 1 and "=" not in argument:
            mode = argument
    mode = mode.strip().strip("'\"rbRB").lower() if mode else ""
    return any(flag in mode for flag in "wax+")


def _cargo_go_stage(name: str, sub: str) -> str:
    if sub in ("test", "nextest", "bench"):
        return TEST
    if sub in ("install", "get", "add", "remove", "fetch", "mod", "update"):
        return INSTALL
    if sub in ("build", "check", "clippy", "vet", "fmt", "doc", "generate", "rustc"):
        return BUILD
    return READ if name == "go" and sub in ("env", "version", "list", "doc") else BUILD


def _node_pm_stage(args: list[str], sub: str) -> str:
    words = [a for a in args if not a.startswith("-")]
    script = words[1] if sub in ("run", "run-script") and len(words) > 1 else sub
    if script in ("test", "t", "tst") or script.startswith("test"):
        return TEST
    if script in ("build", "lint", "tsc", "compile", "typecheck", "format"):
        return BUILD
    return INSTALL


def _git_stage(args: list[str]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        # git -C DIR / -c KEY=VALUE take an argument; --no-pager and friends do not.
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree") else 1
    sub = args[i] if i < len(args) else ""
    rest = args[i + 1 :]
    if sub in GIT_BUILD:
        return BUILD
    if sub in GIT_WRITE:
        return WRITE
    if sub == "branch" and any(a in ("-d", "-D", "-m", "-M", "--delete") for a in rest):
        return WRITE
    if sub == "diff" and any(a.startswith("--output") for a in rest):
        return WRITE
    return READ


def _find_stages(args: list[str], depth: int) -> set[str]:
    if "-delete" in args:
        return {WRITE}
    found: set[str] = {READ}
    for flag in ("-exec", "-execdir", "-ok"):
        if flag in args:
            start = args.index(flag) + 1
            inner = []
            for word in args[start:]:
                if word in (";", "\\;", "+"):
                    break
                inner.append(word)
            found |= _program_stages(inner, [], depth + 1)
    return found
