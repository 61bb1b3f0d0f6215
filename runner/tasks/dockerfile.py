"""A task's environment/Dockerfile, read for what a replay needs: its base and its steps.

A Dockerfile FROM the standard image whose steps are only WORKDIR, ENV, COPY (of the task's own
files) and RUN can be replayed in a sandbox of the standard image on every provider: the files
uploaded, the RUN commands run with bash, untimed, as an image build is. Any other Dockerfile
(another base, several stages, ADD of a URL, COPY --from) needs a real image build; the workload
says so per provider (Not Supported) instead of running something else. Pure: no Django.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

# The base a replayable environment names: the standard image (runner/images/standard.yaml).
STANDARD_BASE = "boxbench-standard"
DEFAULT_WORKDIR = "/app"
# Instructions that change nothing a replay of the oracle and verifier depends on.
_IGNORED = {"LABEL", "EXPOSE", "CMD", "ENTRYPOINT", "HEALTHCHECK", "STOPSIGNAL", "VOLUME", "ARG"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DockerfileError(ValueError):
    """A Dockerfile that cannot be read, naming the file and the line."""


@dataclass(frozen=True)
class Step:
    kind: str  # workdir | env | copy | run
    # workdir: (path,); env: (name, value); copy: (source file, destination) pairs; run: (command,)
    args: tuple


@dataclass(frozen=True)
class Environment:
    base: str
    steps: tuple[Step, ...]
    on_standard: bool  # replayable in a sandbox of the standard image
    why_not: str  # when not on_standard: what needs a real image build

    @property
    def workdir(self) -> str:
        workdir = DEFAULT_WORKDIR
        for step in self.steps:
            if step.kind == "workdir":
                workdir = step.args[0]
        return workdir


def parse(folder: Path, files: set[str]) -> Environment:
    """Read folder/Dockerfile; `files` are the task's files, relative to the task directory."""
    path = folder / "Dockerfile"
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DockerfileError(f"{path}: not UTF-8 text") from None
    env_files = sorted(
        f.removeprefix("environment/") for f in files if f.startswith("environment/")
    )
    base, steps, why_not = "", [], ""
    workdir = DEFAULT_WORKDIR
    for number, instruction, rest in _instructions(text):
        where = f"{path}: line {number}: {instruction}"
        if instruction == "FROM":
            if base:
                why_not = why_not or "several build stages"
                continue
            base = rest.split()[0] if rest.split() else ""
            if not base:
                raise DockerfileError(f"{where}: names no image")
        elif not base:
            raise DockerfileError(f"{where}: comes before FROM")
        elif instruction == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, rest.strip()))
            steps.append(Step("workdir", (workdir,)))
        elif instruction == "ENV":
            steps.extend(Step("env", pair) for pair in _env_pairs(rest, where))
        elif instruction in ("COPY", "ADD"):
            words = _words(rest, where)
            flags = [w for w in words if w.startswith("--")]
            words = [w for w in words if not w.startswith("--")]
            if any(f.startswith("--from") for f in flags):
                why_not = why_not or f"line {number}: COPY --from another stage"
                continue
            if len(words) < 2:
                raise DockerfileError(f"{where}: needs a source and a destination")
            if instruction == "ADD" and any("://" in w for w in words[:-1]):
                why_not = why_not or f"line {number}: ADD from a URL needs the network"
                continue
            pairs = _copies(words[:-1], words[-1], workdir, env_files, where)
            steps.append(Step("copy", tuple(pairs)))
        elif instruction == "RUN":
            command = _run_command(rest, where)
            steps.append(Step("run", (command,)))
        elif instruction in ("USER", "SHELL", "ONBUILD"):
            why_not = why_not or f"line {number}: {instruction} is not replayed"
        elif instruction not in _IGNORED:
            raise DockerfileError(f"{where}: not a Dockerfile instruction")
    if not base:
        raise DockerfileError(f"{path}: has no FROM")
    on_standard = _names_standard(base) and not why_not
    if not _names_standard(base):
        why_not = f"its base image {base} is not the standard image"
    return Environment(base, tuple(steps), on_standard, "" if on_standard else why_not)


def replay_script(environment: Environment, staging: str) -> str:
    """Bash that applies the steps in a sandbox of the standard image, the copied files read
    from `staging` (where the caller uploaded the environment folder)."""
    lines = ["set -eu", f"mkdir -p {_q(DEFAULT_WORKDIR)}", f"cd {_q(DEFAULT_WORKDIR)}"]
    for step in environment.steps:
        if step.kind == "workdir":
            lines += [f"mkdir -p {_q(step.args[0])}", f"cd {_q(step.args[0])}"]
        elif step.kind == "env":
            lines.append(f"export {step.args[0]}={_q(step.args[1])}")
        elif step.kind == "copy":
            for source, destination in step.args:
                parent = posixpath.dirname(destination)
                lines.append(f"mkdir -p {_q(parent)}")
                lines.append(f"cp -- {_q(staging + '/' + source)} {_q(destination)}")
        else:
            lines.append(f"bash -euo pipefail -c {_q(step.args[0])}")
    return "\n".join(lines) + "\n"


def environment_variables(environment: Environment) -> dict[str, str]:
    """The ENV values the image would carry, for the commands run in it."""
    return {s.args[0]: s.args[1] for s in environment.steps if s.kind == "env"}


def _names_standard(base: str) -> bool:
    name = re.split(r"[:@]", base, maxsplit=1)[0]
    return name == STANDARD_BASE


def _instructions(text: str):
    """(line number, INSTRUCTION, rest) with continuation lines joined and comments dropped."""
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        instruction, _, rest = whole.partition(" ")
        yield start, instruction.upper(), rest.strip()
    if pending:
        instruction, _, rest = pending.strip().partition(" ")
        yield start, instruction.upper(), rest.strip()


def _words(rest: str, where: str) -> list[str]:
    if rest.startswith("["):
        try:
            words = json.loads(rest)
        except ValueError:
            raise DockerfileError(f"{where}: not a JSON list") from None
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise DockerfileError(f"{where}: the JSON form is a list of strings")
        return words
    return rest.split()


def _run_command(rest: str, where: str) -> str:
    if rest.startswith("["):
        return " ".join(_shell_quote(w) for w in _words(rest, where))
    if not rest:
        raise DockerfileError(f"{where}: names no command")
    return rest


def _env_pairs(rest: str, where: str) -> list[tuple[str, str]]:
    words = rest.split()
    if words and "=" not in words[0]:  # the legacy form: ENV NAME value with spaces
        name, _, value = rest.partition(" ")
        pairs = [(name, value.strip())]
    else:
        pairs = []
        for word in words:
            name, equals, value = word.partition("=")
            if not equals:
                raise DockerfileError(f"{where}: {word!r} is not NAME=value")
            pairs.append((name, value.strip('"')))
    for name, _ in pairs:
        if not _ENV_NAME.match(name):
            raise DockerfileError(f"{where}: {name!r} is not a variable name")
    return pairs


def _copies(sources, destination: str, workdir: str, files: list[str], where: str):
    """(file relative to environment/, absolute destination) for each file a COPY brings."""
    destination = posixpath.join(workdir, destination)
    into_folder = destination.endswith("/") or len(sources) > 1
    pairs = []
    for source in sources:
        normal = posixpath.normpath(source)
        if source.startswith("/") or normal == ".." or normal.startswith("../"):
            raise DockerfileError(
                f"{where}: source {source!r} is a host path; a COPY takes the task's own files"
            )
        matched = _matching(normal, files)
        if not matched:
            raise DockerfileError(f"{where}: source {source!r} is no file of environment/")
        for name, below in matched:
            if below is None:  # the file itself
                target = posixpath.join(destination, posixpath.basename(name))
                if not into_folder:
                    target = destination
            else:  # a file of a copied folder keeps its place below it
                target = posixpath.join(destination, below)
            pairs.append((name, posixpath.normpath(target)))
    return pairs


def _matching(source: str, files: list[str]) -> list[tuple[str, str | None]]:
    if source == ".":
        whole: list[tuple[str, str | None]] = [(f, f) for f in files if f != "Dockerfile"]
        return whole
    if source in files:
        return [(source, None)]
    below: list[tuple[str, str | None]] = [
        (f, f[len(source) + 1 :]) for f in files if f.startswith(source + "/")
    ]
    if below:
        return below
    return [(f, None) for f in files if fnmatch.fnmatchcase(f, source)]


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _shell_quote(word: str) -> str:
    return word if re.match(r"^[A-Za-z0-9_./:=@%+-]+$", word) else _q(word)
