"""The trace unit format (schema_version 1): load, validate and fingerprint a trace.

A trace unit is a folder runner/traces/<slug>/ holding `trace.json` and the repository archive it
names. docs/traces.md documents every field. Validation is strict: a malformed trace is refused
with a TraceError naming the file, the command index and the field. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

SCHEMA_VERSION = 1
TRACES_DIR = Path(__file__).resolve().parent
STRATA = ("compile", "test-suite", "edit-loop")
# The repository is committed with this identity and date, so its blobs and diff are the same in
# every sandbox (the commit hash itself never enters the patch digest).
GIT_AUTHOR = "boxbench traces"
GIT_EMAIL = "traces@boxbench.invalid"
GIT_DATE = "2026-01-01T00:00:00+00:00"

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{1,78}[a-z0-9]$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def is_slug(text: str) -> bool:
    """Whether `text` may name a unit folder (fullmatch: `$` alone would let a newline end it)."""
    return isinstance(text, str) and _SLUG.fullmatch(text) is not None


_ARCHIVE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.(tar\.gz|tgz)$")
MIN_COMMANDS, MAX_COMMANDS = 1, 500


class TraceError(ValueError):
    """A trace file that cannot be used, with where and why."""


@dataclass(frozen=True)
class Command:
    command: str
    exit_code: int
    duration_ms: float


@dataclass(frozen=True)
class Repository:
    archive: str  # file name inside the unit folder
    sha256: str
    strip_components: int
    source: str  # where the archive came from (a PyPI release page, a user's repository...)


@dataclass(frozen=True)
class Trace:
    slug: str
    title: str
    stratum: str
    description: str
    repository: Repository
    commands: tuple[Command, ...]
    patch_sha256: str
    folder: Path

    @property
    def archive_path(self) -> Path:
        return self.folder / self.repository.archive

    @property
    def recorded_ms(self) -> float:
        return sum(c.duration_ms for c in self.commands)

    def to_dict(self) -> dict:
        return trace_dict(
            slug=self.slug,
            title=self.title,
            stratum=self.stratum,
            description=self.description,
            repository=self.repository.__dict__,
            commands=[c.__dict__ for c in self.commands],
            patch_sha256=self.patch_sha256,
        )

    def digest(self) -> str:
        """SHA-256 of the canonical trace content: changes whenever comparability would."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()


def trace_dict(
    *, slug, title, stratum, description, repository, commands, patch_sha256
) -> dict[str, object]:
    """A trace as the JSON object written to trace.json, keys in documented order."""
    return {
        "schema_version": SCHEMA_VERSION,
        "slug": slug,
        "title": title,
        "stratum": stratum,
        "description": description,
        "repository": dict(repository),
        "commands": [dict(c) for c in commands],
        "patch_sha256": patch_sha256,
    }


def canonical_json(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dump_trace(data: dict) -> str:
    """trace.json text: one command per line keeps diffs of a re-recorded trace readable."""
    lines = []
    for key, value in data.items():
        if key == "commands":
            rows = ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in value)
            lines.append(f'  "commands": [\n{rows}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def load_trace(path: Path | str, check_archive: bool = True) -> Trace:
    """Read and validate one trace.json; with check_archive, also its archive's SHA-256."""
    path = Path(path)
    trace = parse_trace(read_json(path, TraceError, "trace"), path)
    if check_archive:
        verify_archive(trace)
    return trace


def read_json(path: Path, error: type[ValueError], what: str) -> object:
    """A unit file's JSON; a missing, undecodable or malformed file raises `error` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not valid JSON ({exc})") from None


def parse_trace(raw: object, path: Path) -> Trace:
    """Validate a decoded trace.json object; every error names the file and the field."""

    def fail(where: str, problem: str) -> TraceError:
        return TraceError(f"{path}: {where}: {problem}")

    if not isinstance(raw, dict):
        raise fail("top level", "must be a JSON object")
    known = {
        "schema_version",
        "slug",
        "title",
        "stratum",
        "description",
        "repository",
        "commands",
        "patch_sha256",
    }
    for key in raw:
        if key not in known:
            raise fail(key, "unknown field")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise fail("schema_version", f"must be {SCHEMA_VERSION}, got {version!r}")
    slug = _text(raw, "slug", fail)
    if not is_slug(slug):
        raise fail("slug", f"must be lowercase letters, digits and dashes, got {slug!r}")
    if path.name == "trace.json" and path.parent.name != slug:
        raise fail("slug", f"{slug!r} must match the unit folder name {path.parent.name!r}")
    stratum = _text(raw, "stratum", fail)
    if stratum not in STRATA:
        raise fail("stratum", f"must be one of {', '.join(STRATA)}, got {stratum!r}")
    repository = _repository(raw.get("repository"), fail)
    commands = raw.get("commands")
    if not isinstance(commands, list) or not (MIN_COMMANDS <= len(commands) <= MAX_COMMANDS):
        raise fail("commands", f"must be a list of {MIN_COMMANDS} to {MAX_COMMANDS} commands")
    parsed = tuple(_command(i, c, fail) for i, c in enumerate(commands))
    patch = raw.get("patch_sha256")
    if not isinstance(patch, str) or not _SHA256.match(patch):
        raise fail("patch_sha256", f"must be 64 lowercase hex digits, got {patch!r}")
    return Trace(
        slug=slug,
        title=_text(raw, "title", fail),
        stratum=stratum,
        description=_text(raw, "description", fail, required=False),
        repository=repository,
        commands=parsed,
        patch_sha256=patch,
        folder=path.parent,
    )


def _text(raw: dict, key: str, fail, required: bool = True) -> str:
    value = raw.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise fail(key, f"must be a non-empty string, got {value!r}")
    return value


def _repository(raw: object, fail) -> Repository:
    if not isinstance(raw, dict):
        raise fail("repository", "must be an object with archive, sha256, strip_components, source")
    for key in raw:
        if key not in ("archive", "sha256", "strip_components", "source"):
            raise fail(f"repository.{key}", "unknown field")
    archive = raw.get("archive")
    if not isinstance(archive, str) or not _ARCHIVE.match(archive):
        raise fail("repository.archive", f"must be a .tar.gz file name, got {archive!r}")
    sha = raw.get("sha256")
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise fail("repository.sha256", f"must be 64 lowercase hex digits, got {sha!r}")
    strip = raw.get("strip_components", 1)
    if not isinstance(strip, int) or isinstance(strip, bool) or not 0 <= strip <= 3:
        raise fail("repository.strip_components", f"must be an integer 0-3, got {strip!r}")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise fail("repository.source", f"must say where the archive came from, got {source!r}")
    return Repository(archive=archive, sha256=sha, strip_components=strip, source=source)


def _command(index: int, raw: object, fail) -> Command:
    where = f"commands[{index}]"
    if not isinstance(raw, dict):
        raise fail(where, "must be an object with command, exit_code, duration_ms")
    for key in raw:
        if key not in ("command", "exit_code", "duration_ms"):
            raise fail(f"{where}.{key}", "unknown field")
    command = raw.get("command")
    if not isinstance(command, str) or not command.strip():
        raise fail(f"{where}.command", f"must be a non-empty string, got {command!r}")
    if "\x00" in command:
        raise fail(f"{where}.command", "must not contain NUL characters")
    code = raw.get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code <= 255:
        raise fail(f"{where}.exit_code", f"must be an integer 0-255, got {code!r}")
    duration = raw.get("duration_ms")
    if (
        not isinstance(duration, int | float)
        or isinstance(duration, bool)
        or not 0 <= duration < 3_600_000
    ):
        raise fail(f"{where}.duration_ms", f"must be 0 ms to 1 h, got {duration!r}")
    return Command(command=command, exit_code=code, duration_ms=float(duration))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_archive(trace: Trace) -> None:
    path = trace.archive_path
    if not path.is_file():
        raise TraceError(f"{trace.folder / 'trace.json'}: repository.archive: {path} is missing")
    actual = sha256_file(path)
    if actual != trace.repository.sha256:
        raise TraceError(
            f"{trace.folder / 'trace.json'}: repository.sha256: {path.name} has SHA-256 {actual}, "
            f"the trace pins {trace.repository.sha256}"
        )


def is_git_member(name: str) -> bool:
    """Whether an archive member lies in a `.git` (a planted repository: its hooks and config
    would run at the preparation's git commands)."""
    return ".git" in name.replace("\\", "/").split("/")


def check_members(archive: Path, error: type[ValueError] = ValueError) -> None:
    """Refuse an archive holding a `.git` member, naming it; raise `error`. Each archive's
    contents are read once per process (by their SHA-256): a unit's trials reuse the answer."""
    digest = sha256_file(archive)
    if digest in _CLEAN_ARCHIVES:
        return
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                if is_git_member(member.name):
                    raise error(f"{archive.name}: refusing member {member.name!r} (a .git)")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise error(f"{archive.name}: cannot read the archive: {exc}") from None
    _CLEAN_ARCHIVES.add(digest)


_CLEAN_ARCHIVES: set[str] = set()


def trace_folders(root: Path = TRACES_DIR) -> list[Path]:
    """Unit folders under `root` (those holding a trace.json), sorted by name."""
    return sorted(p.parent for p in root.glob("*/trace.json"))


def load_all(root: Path = TRACES_DIR) -> list[Trace]:
    return [load_trace(folder / "trace.json") for folder in trace_folders(root)]
