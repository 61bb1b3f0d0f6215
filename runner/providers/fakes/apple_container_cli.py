"""A stand-in for Apple's `container` command-line tool, for the apple-container adapter's tests
on Linux, where the tool cannot run. `install(directory)` writes an executable `container` there.

It answers the documented commands (apple/container docs/command-reference.md) with their
options, output and errors: `--version`; `system status`; `run` (--detach, --rm/--remove,
--name, -l/--label, -c/--cpus, -m/--memory, -e/--env, -w/--workdir/--cwd, --entrypoint,
-i/--interactive, image, init arguments); `exec` (-i/--interactive, -e/--env,
-w/--workdir/--cwd, -d/--detach); `stop` and `kill`; `delete`/`rm` (-f/--force, -a/--all);
`list`/`ls` (-a/--all, --format json|table, -q/--quiet); `inspect`. The tool's errors are
`Error: <kind>: "<message>"` on stderr with exit status 1 (notFound, invalidState, exists); an
unknown option or a missing argument is the argument parser's `Error: ...` with status 64.

A container is a directory of state plus its init process, started detached; `/app` and `/tmp`
are directories of its own, bound into every process (bubblewrap over the host's toolchain, as
the local provider does). Its processes share the host's process table (a VM shares one within
itself); the init ends at the end of its arguments (`sleep <s>`), the container then stops and,
with --rm, is removed. The stand-in runs no VM, enforces no CPU or memory limit, and pulls no
image: every image reference is taken as present.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

STATE_VARIABLE = "BOXBENCH_CONTAINER_STANDIN_STATE"
VERSION = "container CLI version 0.6.0 (build: release, commit: stand-in)"
USAGE = 64  # the argument parser's exit status
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Options by command: those taking a value, and flags. Aliases map to one name.
RUN_VALUES = {
    "--name",
    "--label",
    "-l",
    "--cpus",
    "-c",
    "--memory",
    "-m",
    "--env",
    "-e",
    "--workdir",
    "-w",
    "--cwd",
    "--entrypoint",
    "--network",
    "--user",
    "-u",
    "--platform",
    "--arch",
    "-a",
    "--os",
}
RUN_FLAGS = {"--detach", "-d", "--rm", "--remove", "--interactive", "-i", "--tty", "-t"}
EXEC_VALUES = {"--env", "-e", "--workdir", "-w", "--cwd", "--user", "-u"}
EXEC_FLAGS = {"--interactive", "-i", "--tty", "-t", "--detach", "-d"}
ALIASES = {
    "-l": "--label",
    "-c": "--cpus",
    "-m": "--memory",
    "-e": "--env",
    "-w": "--workdir",
    "--cwd": "--workdir",
    "-d": "--detach",
    "--remove": "--rm",
    "-i": "--interactive",
    "-t": "--tty",
    "-u": "--user",
    "-a": "--all",
    "-f": "--force",
    "-q": "--quiet",
    "-s": "--signal",
}


class Failure(Exception):
    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def install(directory: str | Path, state: str | Path | None = None) -> Path:
    """An executable `container` in `directory` running this stand-in on `state`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = Path(state or directory / "state")
    state.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[3]
    script = directory / "container"
    script.write_text(
        "#!/bin/sh\n"
        f"{STATE_VARIABLE}='{state}' PYTHONPATH='{root}' "
        f"exec '{sys.executable}' -m runner.providers.fakes.apple_container_cli \"$@\"\n"
    )
    script.chmod(0o755)
    return script


def parse(args: list[str], values: set[str], flags: set[str]) -> tuple[dict, list[str]]:
    """Options before the first positional argument, the rest as given (the tool's rule)."""
    options: dict[str, list[str]] = {}
    at = 0
    while at < len(args) and args[at].startswith("-") and args[at] != "-":
        name, has_value, value = args[at].partition("=")
        if name in values:
            if not has_value:
                at += 1
                if at >= len(args):
                    raise Failure(f"Error: Missing value for '{name}'", USAGE)
                value = args[at]
            options.setdefault(ALIASES.get(name, name), []).append(value)
        elif name in flags and not has_value:
            options.setdefault(ALIASES.get(name, name), []).append("")
        else:
            raise Failure(f"Error: Unknown option '{args[at]}'", USAGE)
        at += 1
    return options, args[at:]


class StandIn:
    def __init__(self, state: Path):
        self.state = state
        (state / "containers").mkdir(parents=True, exist_ok=True)

    # -- records ---------------------------------------------------------------------------------

    def _path(self, name: str) -> Path:
        return self.state / "containers" / f"{name}.json"

    def load(self, name: str) -> dict:
        try:
            record = json.loads(self._path(name).read_text())
        except (OSError, ValueError):
            raise Failure(f'Error: notFound: "container with ID {name} not found"') from None
        return self._settle(record)

    def all(self) -> list[dict]:
        records = []
        for path in sorted((self.state / "containers").glob("*.json")):
            with contextlib.suppress(Failure):
                records.append(self.load(path.stem))
        return [r for r in records if self._path(r["id"]).exists()]

    def save(self, record: dict) -> None:
        path = self._path(record["id"])
        path.with_suffix(".tmp").write_text(json.dumps(record))
        path.with_suffix(".tmp").replace(path)

    def _settle(self, record: dict) -> dict:
        """A container whose init process ended is stopped, and with --rm removed."""
        if record["state"] == "running" and not _alive(record["pid"]):
            record["state"] = "stopped"
            if record["remove"]:
                self._remove(record)
            else:
                self.save(record)
        return record

    def _remove(self, record: dict) -> None:
        self._kill_all(record)
        self._path(record["id"]).unlink(missing_ok=True)
        shutil.rmtree(self.state / "roots" / record["id"], ignore_errors=True)

    def _kill_all(self, record: dict) -> None:
        roots = self.state / "roots" / record["id"]
        pids = [record["pid"]] + [int(p.name) for p in (roots / "execs").glob("*")]
        for pid in pids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)

    def document(self, record: dict) -> dict:
        """The JSON the tool prints for one container (list --format json, inspect)."""
        return {
            "configuration": {
                "id": record["id"],
                "image": {"reference": record["image"]},
                "labels": record["labels"],
                "resources": {"cpus": record["cpus"], "memoryInBytes": record["memory"]},
                "initProcess": {
                    "executable": record["init"][0],
                    "arguments": record["init"][1:],
                    "workingDirectory": record["workdir"],
                },
                "platform": {"architecture": "arm64", "os": "linux"},
                "runtimeHandler": "container-runtime-linux",
            },
            "id": record["id"],
            "status": {"state": record["state"], "networks": [], "startedDate": record["created"]},
        }

    # -- processes -------------------------------------------------------------------------------

    def _sandbox(self, record: dict, argv: list[str], workdir: str, env: dict) -> list[str]:
        from runner.providers.local.toolchain import toolchain_binds

        roots = self.state / "roots" / record["id"]
        command = [
            shutil.which("bwrap") or "bwrap",
            "--unshare-ipc",
            "--unshare-uts",
            "--hostname",
            record["id"][:63],
            *toolchain_binds(),
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--bind",
            str(roots / "tmp"),
            "/tmp",
            "--bind",
            str(roots / "app"),
            "/app",
            "--chdir",
            workdir,
            "--clearenv",
            "--setenv",
            "PATH",
            PATH,
            "--setenv",
            "HOME",
            "/root",
        ]
        for key, value in env.items():
            command += ["--setenv", key, value]
        return [*command, "--", *argv]

    # -- commands --------------------------------------------------------------------------------

    def run(self, args: list[str]) -> int:
        options, rest = parse(args, RUN_VALUES, RUN_FLAGS)
        if not rest:
            raise Failure("Error: Missing expected argument '<image>'", USAGE)
        image, arguments = rest[0], rest[1:]
        name = (options.get("--name") or [f"c{os.urandom(6).hex()}"])[-1]
        if self._path(name).exists():
            raise Failure(f'Error: exists: "container with id {name} already exists"')
        labels = {}
        for label in options.get("--label", []):
            key, sep, value = label.partition("=")
            if not sep or not key:
                raise Failure(f'Error: invalidArgument: "invalid label {label}"')
            labels[key] = value
        entrypoint = options.get("--entrypoint")
        init = ([entrypoint[-1]] if entrypoint else []) + arguments
        if not init:
            raise Failure(f'Error: invalidArgument: "image {image} has no command to run"')
        roots = self.state / "roots" / name
        for sub in ("app", "tmp", "execs"):
            (roots / sub).mkdir(parents=True, exist_ok=True)
        record = {
            "id": name,
            "image": image,
            "labels": labels,
            "state": "running",
            "pid": 0,
            "cpus": int((options.get("--cpus") or ["4"])[-1]),
            "memory": _bytes((options.get("--memory") or ["1024M"])[-1]),
            "workdir": (options.get("--workdir") or ["/"])[-1],
            "init": init,
            "remove": "--rm" in options,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        env = dict(e.partition("=")[::2] for e in options.get("--env", []))
        with open(roots / "init.log", "wb") as log:
            process = subprocess.Popen(
                self._sandbox(record, init, record["workdir"], env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        record["pid"] = process.pid
        self.save(record)
        if "--detach" in options:
            print(name)
            return 0
        return process.wait()

    def exec(self, args: list[str]) -> int:
        options, rest = parse(args, EXEC_VALUES, EXEC_FLAGS)
        if len(rest) < 2:
            missing = "<container-id>" if not rest else "<arguments>"
            raise Failure(f"Error: Missing expected argument '{missing}'", USAGE)
        record = self.load(rest[0])
        if record["state"] != "running":
            raise Failure(f'Error: invalidState: "container {rest[0]} is not running"')
        env = dict(e.partition("=")[::2] for e in options.get("--env", []))
        workdir = (options.get("--workdir") or [record["workdir"]])[-1]
        command = self._sandbox(record, rest[1:], workdir, env)
        execs = self.state / "roots" / record["id"] / "execs"
        stdin = None if "--interactive" in options else subprocess.DEVNULL
        if "--detach" in options:
            stdin = subprocess.DEVNULL
        process = subprocess.Popen(command, stdin=stdin, start_new_session=True)
        marker = execs / str(process.pid)
        marker.touch()
        try:
            return 0 if "--detach" in options else process.wait()
        finally:
            if "--detach" not in options:
                marker.unlink(missing_ok=True)

    def stop(self, args: list[str], kill: bool = False) -> int:
        values = {"--signal", "-s"} | (set() if kill else {"--time", "-t"})
        options, names = parse(args, values, {"--all", "-a"})
        if "--all" in options:
            names = [r["id"] for r in self.all() if r["state"] == "running"]
        for name in names:
            record = self.load(name)
            if record["state"] == "running":
                with contextlib.suppress(OSError):
                    os.killpg(record["pid"], signal.SIGKILL if kill else signal.SIGTERM)
                _wait_dead(record["pid"], float((options.get("--time") or ["5"])[-1]))
                self._kill_all(record)
                _wait_dead(record["pid"], 5)
                self._settle(record)
            print(name)
        return 0

    def delete(self, args: list[str]) -> int:
        options, names = parse(args, set(), {"--all", "-a", "--force", "-f"})
        if "--all" in options:
            names = [r["id"] for r in self.all()]
        for name in names:
            record = self.load(name)
            if record["state"] == "running" and "--force" not in options:
                raise Failure(
                    f'Error: invalidState: "container {name} is running; stop it '
                    'first, or delete it with --force"'
                )
            self._remove(record)
            _wait_dead(record["pid"], 5)
            print(name)
        return 0

    def list_containers(self, args: list[str]) -> int:
        options, rest = parse(args, {"--format"}, {"--all", "-a", "--quiet", "-q"})
        if rest:
            raise Failure(f"Error: Unexpected argument '{rest[0]}'", USAGE)
        output = (options.get("--format") or ["table"])[-1]
        if output not in ("json", "table"):
            raise Failure(f"Error: The value '{output}' is invalid for '--format <format>'", USAGE)
        records = [r for r in self.all() if "--all" in options or r["state"] == "running"]
        if "--quiet" in options:
            print("\n".join(r["id"] for r in records))
        elif output == "json":
            print(json.dumps([self.document(r) for r in records]))
        else:
            print("ID  IMAGE  OS  ARCH  STATE  ADDR")
            for r in records:
                print(f"{r['id']}  {r['image']}  linux  arm64  {r['state']}")
        return 0

    def inspect(self, args: list[str]) -> int:
        _, names = parse(args, set(), set())
        if not names:
            raise Failure("Error: Missing expected argument '<container-ids> ...'", USAGE)
        print(json.dumps([self.document(self.load(name)) for name in names]))
        return 0


def _bytes(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50}
    number, unit = (text[:-1], text[-1].upper()) if text[-1:].isalpha() else (text, "M")
    if unit not in units or not number.isdigit():
        raise Failure(f'Error: invalidArgument: "invalid memory size {text}"')
    return int(number) * units[unit]


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_dead(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    state = os.environ.get(STATE_VARIABLE)
    if not state:
        print(f"Error: the stand-in needs {STATE_VARIABLE}", file=sys.stderr)
        return USAGE
    tool = StandIn(Path(state))
    try:
        match argv:
            case ["--version"]:
                print(VERSION)
                return 0
            case ["system", "status", *_]:
                print("apiserver is running")
                return 0
            case ["run", *rest]:
                return tool.run(rest)
            case ["exec", *rest]:
                return tool.exec(rest)
            case ["stop", *rest]:
                return tool.stop(rest)
            case ["kill", *rest]:
                return tool.stop(rest, kill=True)
            case ["delete" | "rm", *rest]:
                return tool.delete(rest)
            case ["list" | "ls", *rest]:
                return tool.list_containers(rest)
            case ["inspect", *rest]:
                return tool.inspect(rest)
            case [other, *_]:
                raise Failure(f"Error: Unexpected argument '{other}'", USAGE)
            case []:
                raise Failure("Error: Missing expected subcommand", USAGE)
    except Failure as exc:
        print(str(exc), file=sys.stderr)
        return exc.status
    return USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
