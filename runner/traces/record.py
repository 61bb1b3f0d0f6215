"""Turn an agent session into a trace unit, and run trace scripts outside the lifecycle.

`read_session` accepts three shapes (docs/traces.md): plain text (one command per line), a JSON
array of command strings, and an agent trajectory (Anthropic or OpenAI style messages whose bash
tool calls carry {"command": ...}). `record_trace` replays the commands once - on the local
provider by default - to capture each exit code and duration and the final patch digest, then
writes runner/traces/<slug>/ with the archive and trace.json. Nothing is written until the
recording has succeeded, so a failed recording leaves no half-made unit behind.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runner.outcomes import Outcome
from runner.traces import replay
from runner.traces.format import (
    STRATA,
    TRACES_DIR,
    Trace,
    TraceError,
    check_members,
    dump_trace,
    is_slug,
    load_trace,
    parse_trace,
    sha256_file,
    trace_dict,
)
from runner.traces.screen import screen_commands, screen_recording

DENYPROXY = Path(__file__).resolve().with_name("denyproxy.py")
SANDBOX_ARCHIVE = "/tmp/boxbench-repo.tar.gz"
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASH_TOOL_NAMES = {"bash", "shell", "terminal", "execute_bash", "run_shell_command", "exec"}
PLACEHOLDER_DIGEST = "0" * 64


class SessionError(ValueError):
    """A session file that holds no usable commands, with where and why."""


# -- reading sessions ----------------------------------------------------------------------------


def read_session(text: str, fmt: str = "auto", source: str = "session") -> list[str]:
    """The shell commands of a session, in order. `fmt`: auto, text, json or trajectory."""
    if fmt == "auto":
        stripped = text.lstrip()
        fmt = "text"
        if stripped.startswith(("[", "{")):
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                data = None
            if isinstance(data, list) and all(isinstance(item, str) for item in data):
                fmt = "json"
            elif data is not None:
                fmt = "trajectory"
    if fmt == "text":
        commands = [line for line in text.splitlines() if line.strip()]
    elif fmt == "json":
        data = _json(text, source)
        if not isinstance(data, list) or not all(isinstance(c, str) for c in data):
            raise SessionError(f"{source}: a JSON session must be an array of command strings")
        commands = [c for c in data if c.strip()]
    elif fmt == "trajectory":
        commands = list(trajectory_commands(_json(text, source), source))
    else:
        raise SessionError(f"{source}: unknown session format {fmt!r}")
    if not commands:
        raise SessionError(f"{source}: the session holds no shell commands")
    return commands


def _json(text: str, source: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{source}: not valid JSON ({exc})") from None


def trajectory_commands(data, source: str = "trajectory") -> Iterable[str]:
    """Bash tool calls of an Anthropic or OpenAI style message list (or {"messages": [...]})."""
    if isinstance(data, dict):
        for key in ("messages", "trajectory", "history", "items", "output"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise SessionError(f"{source}: a trajectory must be a list of messages")
    for position, message in enumerate(data):
        if not isinstance(message, dict):
            raise SessionError(f"{source}: message {position} is not an object")
        yield from _message_commands(message, f"{source}: message {position}")


def _message_commands(message: dict, where: str) -> Iterable[str]:
    # Anthropic: {"role": "assistant", "content": [{"type": "tool_use", "name", "input"}]}
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                command = _tool_command(block.get("name"), block.get("input"), where)
                if command:
                    yield command
    # OpenAI chat: {"role": "assistant", "tool_calls": [{"function": {"name", "arguments"}}]}
    for call in message.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        command = _tool_command(function.get("name"), function.get("arguments"), where)
        if command:
            yield command
    # OpenAI responses: {"type": "function_call", "name", "arguments"} items in the list itself.
    if message.get("type") == "function_call":
        command = _tool_command(message.get("name"), message.get("arguments"), where)
        if command:
            yield command


def _tool_command(name, arguments, where: str) -> str | None:
    if not isinstance(name, str) or not (name in BASH_TOOL_NAMES or "bash" in name.lower()):
        return None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            raise SessionError(f"{where}: tool call arguments are not valid JSON") from None
    if not isinstance(arguments, dict):
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        command = shlex.join(command)
    if not isinstance(command, str) or not command.strip():
        return None  # a restart or a tool call without a command
    return command


# -- running the scripts -------------------------------------------------------------------------


@dataclass
class ScriptRun:
    exit_code: int
    records: str
    output: str
    key: str  # the seal key of these records (replay.parse_records)

    def parsed(self) -> replay.ReplayRecords:
        return replay.parse_records(self.records, self.key)


class HostDirectory:
    """Runs trace scripts with bash in a temporary directory on this machine (no sandbox)."""

    def __init__(self):
        self._temp = tempfile.TemporaryDirectory(prefix="boxbench-trace-")
        self.root = Path(self._temp.name)
        self.workdir = self.root / "app"
        self.workdir.mkdir()
        self.home = self.root / "home"
        self.home.mkdir()

    def prepare(self, trace: Trace) -> None:
        archive = self.root / "repo.tar.gz"
        shutil.copyfile(trace.archive_path, archive)
        self._bash(replay.prepare_script(trace, str(archive), str(self.workdir)), 120)
        shutil.copyfile(DENYPROXY, self.workdir / replay.PROXY_SCRIPT)

    def run(
        self, trace: Trace, recording: bool, timeout: float = 1800, limit: bool = True
    ) -> ScriptRun:
        """`limit=False` only for the reference without the per-command limit (replay_script)."""
        self.prepare(trace)
        key = replay.new_key()
        key_file = self.workdir / replay.KEY_FILE
        key_file.touch(mode=0o600)
        key_file.write_text(key)
        script = replay.replay_script(
            trace, str(self.workdir), recording=recording, home=str(self.home), limit=limit
        )
        result = self._bash(script, timeout, check=False)
        records, output = self._read(replay.RECORDS), self._read(replay.OUTPUT_LOG)
        return ScriptRun(result.returncode, records, output, key)

    def _bash(self, script: str, timeout: float, check: bool = True):
        environment = {"PATH": HOST_PATH, "HOME": str(self.home), "LANG": "C.UTF-8"}
        result = subprocess.run(
            ["bash", "-c", script],
            cwd=self.workdir,
            env=environment,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise TraceError(f"preparing the repository failed: {result.stderr.decode()[-2000:]}")
        return result

    def _read(self, relative: str) -> str:
        path = self.workdir / relative
        return path.read_text(errors="replace") if path.exists() else ""

    def close(self) -> None:
        self._temp.cleanup()


class ProviderSandbox:
    """Runs trace scripts in a fresh sandbox of a provider, untimed (for recording)."""

    def __init__(self, slug: str = "local", cpus: int = 2, memory_mib: int = 4096):
        from runner.providers import get_provider
        from runner.providers.base import SandboxSpec

        self.provider = get_provider(slug)
        spec = SandboxSpec(cpus=cpus, memory_mib=memory_mib, label="trace-record", lifetime_s=3600)
        self.sandbox = self.provider.create(spec)

    def run(self, trace: Trace, recording: bool, timeout: float = 1800) -> ScriptRun:
        provider, sandbox = self.provider, self.sandbox
        provider.upload(sandbox, SANDBOX_ARCHIVE, trace.archive_path.read_bytes())
        prepared = provider.exec(
            sandbox, ["bash", "-c", replay.prepare_script(trace, SANDBOX_ARCHIVE)], 120
        )
        if prepared.exit_code != 0:
            raise TraceError(f"preparing the repository failed: {prepared.stderr.decode()[-2000:]}")
        provider.upload(sandbox, f"/app/{replay.PROXY_SCRIPT}", DENYPROXY.read_bytes())
        key = replay.new_key()
        provider.upload(sandbox, f"/app/{replay.KEY_FILE}", key.encode())
        script = replay.replay_script(trace, recording=recording)
        result = provider.exec(sandbox, ["bash", "-c", script], timeout)
        read = provider.exec(
            sandbox, ["bash", "-c", f"cat {replay.RECORDS}; echo; cat {replay.OUTPUT_LOG}"], 60
        )
        records, _, output = read.stdout.decode(errors="replace").partition("\n\n")
        return ScriptRun(result.exit_code, records, output, key)

    def close(self) -> None:
        self.provider.destroy(self.sandbox)


def open_runner(where: str):
    """ "host" for a temporary directory here, otherwise a provider slug (local, docker...)."""
    return HostDirectory() if where == "host" else ProviderSandbox(where)


# -- recording -----------------------------------------------------------------------------------


def record_trace(
    commands: list[str],
    archive: Path,
    *,
    slug: str,
    title: str,
    stratum: str,
    source: str,
    description: str = "",
    strip_components: int = 1,
    where: str = "local",
    out_root: Path = TRACES_DIR,
    verify: bool = True,
    force: bool = False,
) -> Trace:
    """Replay `commands` once on `where` and write the unit folder; return the loaded trace."""
    # Before anything is written: the slug names a folder under out_root and a staging one.
    if not is_slug(slug):
        raise TraceError(
            f"--slug must be 3 to 80 lowercase letters, digits and dashes, got {slug!r}"
        )
    if stratum not in STRATA:
        raise TraceError(f"stratum must be one of {', '.join(STRATA)}, got {stratum!r}")
    _refuse_excluded(screen_commands(commands))
    archive = Path(archive)
    if not archive.is_file():
        raise TraceError(f"{archive}: no such archive")
    check_members(archive, TraceError)
    folder = out_root / slug
    if folder.exists() and not force:
        raise TraceError(f"{folder} already exists (use --force to replace it)")
    with tempfile.TemporaryDirectory(prefix="boxbench-record-") as staging_name:
        staging = Path(staging_name) / slug
        staging.mkdir()
        shutil.copyfile(archive, staging / archive.name)
        draft = _draft(commands, archive.name, staging, slug, title, stratum, source)
        draft = _with(draft, description=description, strip_components=strip_components)
        first = _replay(parse_trace(draft, staging / "trace.json"), where, recording=True)
        recorded = _recorded(draft, first)
        codes = [c["exit_code"] for c in recorded["commands"]]
        _refuse_excluded(screen_recording(codes, commands))
        (staging / "trace.json").write_text(dump_trace(recorded), encoding="utf-8")
        trace = load_trace(staging / "trace.json")
        if verify:
            check = replay.judge(trace, _replay(trace, where, False).parsed())
            if check.outcome != Outcome.SUCCESS:
                raise TraceError(f"the recorded trace does not replay on {where}: {check.cause}")
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(staging, folder)
    return load_trace(folder / "trace.json")


def _refuse_excluded(problems: list[str]) -> None:
    if problems:
        raise TraceError(
            "the session is excluded by DeepSWE's trace rules (docs/traces.md): "
            + "; ".join(problems)
        )


def _draft(commands, archive_name, staging, slug, title, stratum, source) -> dict:
    return trace_dict(
        slug=slug,
        title=title,
        stratum=stratum,
        description="",
        repository={
            "archive": archive_name,
            "sha256": sha256_file(staging / archive_name),
            "strip_components": 1,
            "source": source,
        },
        commands=[{"command": c, "exit_code": 0, "duration_ms": 0.0} for c in commands],
        patch_sha256=PLACEHOLDER_DIGEST,
    )


def _with(draft: dict, description: str, strip_components: int) -> dict:
    draft["description"] = description
    draft["repository"]["strip_components"] = strip_components
    return draft


def _replay(trace: Trace, where: str, recording: bool) -> ScriptRun:
    runner = open_runner(where)
    try:
        return runner.run(trace, recording=recording)
    finally:
        runner.close()


def _recorded(draft: dict, run: ScriptRun) -> dict:
    records = run.parsed()
    if records.setup_error or not records.done or records.digest is None:
        raise TraceError(
            "the recording replay did not finish "
            f"({records.setup_error or f'{len(records.commands)} commands ran'}); "
            f"output tail: {run.output[-1500:]}"
        )
    recorded = json.loads(json.dumps(draft))
    for run_record in records.commands:
        entry = recorded["commands"][run_record.index]
        entry["exit_code"] = run_record.exit_code
        entry["duration_ms"] = round(run_record.wall_ms, 3)
    recorded["patch_sha256"] = records.digest
    return recorded
